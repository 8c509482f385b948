//! Packet loss on loopback ports with nftables (Debian's `nftables`): a
//! table of the run's own (`inet holdfast_chaos_<pid>`) whose output chain
//! drops a share of the TCP segments to and from the given ports, drawn by
//! the kernel (`numgen random`). TCP sees real loss: retransmissions after
//! its timeout (at least 200 ms), backing off while the loss lasts.
//!
//! The kernel here has no `netem` qdisc (no `tc netem`), so nftables is the
//! way to drop packets between processes on one machine. Needs root (or
//! `sudo -n`) and the `nft` program; [`Loss::apply`] says why when it
//! cannot. The drops themselves are not seeded: which segment is lost is
//! the kernel's choice; when, where and how much is the seed's.

use std::process::Stdio;
use tokio::io::AsyncWriteExt;

/// Table names start with this, then the owning process's id.
const TABLE_PREFIX: &str = "holdfast_chaos_";

/// The run's loss rules; at most one set at a time.
#[derive(Debug)]
pub struct Loss {
    table: String,
}

impl Default for Loss {
    fn default() -> Self {
        Loss { table: format!("{TABLE_PREFIX}{}", std::process::id()) }
    }
}

impl Loss {
    /// Drops `permille` (1..=1000) of the TCP segments to or from any of
    /// `ports` (not empty), replacing any rules this process set before.
    pub async fn apply(&self, ports: &[u16], permille: u32) -> Result<(), String> {
        assert!(!ports.is_empty() && (1..=1000).contains(&permille), "loss on {ports:?} at {permille}‰");
        let set = ports.iter().map(u16::to_string).collect::<Vec<_>>().join(", ");
        let table = &self.table;
        let script = format!(
            "table inet {table}\ndelete table inet {table}\n\
             table inet {table} {{\n chain out {{\n  type filter hook output priority 0; policy accept;\n  \
             tcp dport {{ {set} }} numgen random mod 1000 < {permille} counter drop\n  \
             tcp sport {{ {set} }} numgen random mod 1000 < {permille} counter drop\n }}\n}}\n"
        );
        nft(&["-f", "-"], Some(&script)).await
    }

    /// Removes this process's rules (none set: nothing to do), returning
    /// how many segments they dropped.
    pub async fn heal(&self) -> Result<u64, String> {
        let table = &self.table;
        let listed = command().args(["list", "table", "inet", table]).output().await;
        let dropped = listed.map(|out| dropped_packets(&String::from_utf8_lossy(&out.stdout))).unwrap_or(0);
        nft(&["-f", "-"], Some(&format!("table inet {table}\ndelete table inet {table}\n"))).await?;
        Ok(dropped)
    }
}

/// The sum of the `counter packets N` of a listed table.
fn dropped_packets(listing: &str) -> u64 {
    let words: Vec<&str> = listing.split_whitespace().collect();
    words.windows(3).filter(|w| w[0] == "counter" && w[1] == "packets").filter_map(|w| w[2].parse::<u64>().ok()).sum()
}

/// Removes the loss tables of chaos processes that are gone (a run killed
/// before it healed): their ports may be reused by anyone.
pub async fn remove_orphans() {
    let Ok(out) = command().args(["list", "tables"]).output().await else { return };
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let Some(name) = line.strip_prefix("table inet ").filter(|n| n.starts_with(TABLE_PREFIX)) else { continue };
        let Ok(pid) = name[TABLE_PREFIX.len()..].parse::<u32>() else { continue };
        if pid != std::process::id() && !std::path::Path::new(&format!("/proc/{pid}")).exists() {
            let _ = nft(&["delete", "table", "inet", name], None).await;
        }
    }
}

/// `nft` as root, through `sudo -n` otherwise (a CI runner's user).
fn command() -> tokio::process::Command {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let root = status.lines().any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(1) == Some("0"));
    if root {
        tokio::process::Command::new("nft")
    } else {
        let mut sudo = tokio::process::Command::new("sudo");
        sudo.args(["-n", "nft"]);
        sudo
    }
}

/// Runs `nft args`, with `stdin` fed to it where given.
async fn nft(args: &[&str], stdin: Option<&str>) -> Result<(), String> {
    let mut child = command()
        .args(args)
        .stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("nft (Debian's nftables, run as root): {e}"))?;
    if let (Some(text), Some(mut pipe)) = (stdin, child.stdin.take()) {
        pipe.write_all(text.as_bytes()).await.map_err(|e| format!("nft: {e}"))?;
    }
    let out = child.wait_with_output().await.map_err(|e| format!("nft: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!("nft {}: {}", args.join(" "), String::from_utf8_lossy(&out.stderr).trim()))
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn dropped_packets_sums_every_counter() {
        let listing = "table inet t {\n chain out {\n  tcp dport { 1, 2 } numgen random mod 1000 < 300 counter packets 34 bytes 1879 drop\n  \
                       tcp sport { 1, 2 } numgen random mod 1000 < 300 counter packets 30 bytes 1596 drop\n }\n}\n";
        assert_eq!(super::dropped_packets(listing), 64);
        assert_eq!(super::dropped_packets(""), 0);
    }
}
