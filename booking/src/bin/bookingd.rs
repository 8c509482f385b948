//! `bookingd`: the holdfast booking service on PostgreSQL (authority), Redis
//! (seat-map cache) and an HTTP payment provider. The command line lives in
//! [`booking::daemon`].

fn main() {
    std::process::exit(booking::daemon::main_from(std::env::args_os()));
}
