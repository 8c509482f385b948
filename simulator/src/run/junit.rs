//! JUnit XML for CI services: one `<testsuite>` per scenario, one
//! `<testcase>` per seed (a failing seed's message is its first failure and
//! its body every failure and the replay line), and one `expect.must_happen`
//! case when the run judged the scenario's declared paths.

use crate::run::runner::{SeedVerdict, Summary};
use std::fmt::Write as _;

pub use crate::markup::escape;

/// The JUnit document of `runs`: each scenario's summary with its verdicts.
pub fn document(runs: &[(Summary, Vec<SeedVerdict>)]) -> String {
    let mut x = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"holdfast simulator\">\n");
    for (summary, verdicts) in runs {
        let judged_paths = summary.paths_judged;
        let cases = verdicts.len() + usize::from(judged_paths);
        let failures = verdicts.iter().filter(|v| !v.passed).count() + usize::from(!summary.missing_paths.is_empty());
        let per_seed_s = summary.wall_s / verdicts.len().max(1) as f64;
        let _ = writeln!(
            x,
            "  <testsuite name=\"{}\" tests=\"{cases}\" failures=\"{failures}\" errors=\"0\" time=\"{:.3}\">",
            escape(&summary.scenario),
            summary.wall_s
        );
        for v in verdicts {
            let _ = write!(
                x,
                "    <testcase classname=\"holdfast.{}\" name=\"seed {}\" time=\"{per_seed_s:.3}\"",
                escape(&v.scenario),
                v.seed
            );
            if v.passed {
                x.push_str("/>\n");
                continue;
            }
            let first = v.failures.first().map(ToString::to_string).unwrap_or_else(|| "failed".into());
            let mut body: Vec<String> = v.failures.iter().map(ToString::to_string).collect();
            body.push(format!("replay: {}", v.replay));
            let _ = writeln!(
                x,
                ">\n      <failure message=\"{}\" type=\"invariant\">{}</failure>\n    </testcase>",
                escape(&format!("{first} (replay: {})", v.replay)),
                escape(&body.join("\n"))
            );
        }
        if judged_paths {
            let _ = write!(
                x,
                "    <testcase classname=\"holdfast.{}\" name=\"expect.must_happen\" time=\"0\"",
                escape(&summary.scenario)
            );
            if summary.missing_paths.is_empty() {
                x.push_str("/>\n");
            } else {
                let msg = format!("never happened: {}", summary.missing_paths.join(", "));
                let _ = writeln!(
                    x,
                    ">\n      <failure message=\"{}\" type=\"must-happen\">a fault stopped firing or the story is no longer told</failure>\n    </testcase>",
                    escape(&msg)
                );
            }
        }
        x.push_str("  </testsuite>\n");
    }
    x.push_str("</testsuites>\n");
    x
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_keeps_xml_well_formed() {
        assert_eq!(escape("a<b & \"c\" 'd'>\u{1}\n"), "a&lt;b &amp; &quot;c&quot; &#39;d&#39;&gt;\n");
    }
}
