//! `fake-provider`: the Stripe-like fake payment provider as a process. The
//! command line lives in [`booking::fake_provider::cli`].
//!
//! `cargo run -p booking --bin fake-provider -- --listen 127.0.0.1:PORT [--webhook-url URL]`

fn main() {
    std::process::exit(booking::fake_provider::cli::main_from(std::env::args_os()));
}
