//! Paired runs (`loadtest/run.sh --against <commit>`): two builds run in turn on one machine,
//! each figure compared as the ratio of this build's to the other's in every pair, with the
//! spread of those ratios. Absolute figures from another machine (or another day) say little:
//! the same commit moved 30 to 74 % between machines, while paired runs of two commits agreed
//! within a few percent. A figure counts as regressed only when every pair puts it worse than
//! the tolerance, so one noisy run can call nothing.

use std::path::PathBuf;

use super::report::{Better, Figures};

/// One figure across the pairs.
#[derive(Debug, Clone, PartialEq)]
pub struct Paired {
    pub name: String,
    pub better: Better,
    pub base: Vec<f64>,
    pub head: Vec<f64>,
}

/// How a figure moved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Better than the tolerance in every pair.
    Better,
    /// Worse than the tolerance in every pair.
    Regressed,
    /// Inside the tolerance, or the pairs disagree.
    Same,
    /// No ratio: a zero in the other build's figures.
    Undefined,
}

impl Paired {
    /// This build's figure over the other's, pair by pair (`None` when a base is zero).
    pub fn ratios(&self) -> Option<Vec<f64>> {
        self.base.iter().zip(&self.head).map(|(b, h)| (*b != 0.0).then(|| h / b)).collect()
    }

    pub fn verdict(&self, tolerance: f64) -> Verdict {
        let Some(ratios) = self.ratios().filter(|r| !r.is_empty()) else { return Verdict::Undefined };
        let worse = |r: &f64| match self.better {
            Better::Lower => *r > 1.0 + tolerance,
            Better::Higher => *r < 1.0 - tolerance,
        };
        let better = |r: &f64| match self.better {
            Better::Lower => *r < 1.0 - tolerance,
            Better::Higher => *r > 1.0 + tolerance,
        };
        if ratios.iter().all(worse) {
            Verdict::Regressed
        } else if ratios.iter().all(better) {
            Verdict::Better
        } else {
            Verdict::Same
        }
    }
}

/// Lines up the runs of the two builds, pair by pair (run i of each), figure by figure.
pub fn pair(base: &[Figures], head: &[Figures]) -> Vec<Paired> {
    let Some(first) = head.first() else { return Vec::new() };
    first
        .iter()
        .filter_map(|(name, figure)| {
            let base: Option<Vec<f64>> = base.iter().map(|f| f.get(name)).collect();
            let head: Option<Vec<f64>> = head.iter().map(|f| f.get(name)).collect();
            Some(Paired { name: name.to_owned(), better: figure.better, base: base?, head: head? })
        })
        .collect()
}

fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    match sorted.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => sorted[n / 2],
        n => (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0,
    }
}

/// Reads the figures files of both builds, prints every figure's ratio and spread, and returns
/// the regressed figures' names.
pub fn compare(base: &[PathBuf], head: &[PathBuf], tolerance: f64) -> anyhow::Result<Vec<String>> {
    if base.len() != head.len() || base.is_empty() {
        anyhow::bail!("give as many --base as --head runs (one of each per pair), at least one");
    }
    let read = |paths: &[PathBuf]| paths.iter().map(|p| Figures::read(p)).collect::<anyhow::Result<Vec<_>>>();
    let paired = pair(&read(base)?, &read(head)?);
    println!(
        "\n{} pair(s); ratio = this build / the other (median, and its spread over the pairs); tolerance {:.0} %",
        base.len(),
        tolerance * 100.0
    );
    println!("{:<28} {:>11} {:>11} {:>7} {:>15}  verdict", "figure", "other", "this", "ratio", "spread");
    let mut regressed = Vec::new();
    for p in &paired {
        let verdict = p.verdict(tolerance);
        let (ratio, spread) = match p.ratios() {
            Some(r) => {
                let (lo, hi) =
                    r.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), x| (lo.min(*x), hi.max(*x)));
                (format!("{:.3}", median(&r)), format!("{lo:.3}..{hi:.3}"))
            }
            None => ("-".to_owned(), "-".to_owned()),
        };
        let word = match verdict {
            Verdict::Better => "better",
            Verdict::Regressed => "REGRESSED",
            Verdict::Same => "same",
            Verdict::Undefined => "-",
        };
        let (b, h) = (median(&p.base), median(&p.head));
        println!("{:<28} {b:>11.2} {h:>11.2} {ratio:>7} {spread:>15}  {word}", p.name);
        if verdict == Verdict::Regressed {
            regressed.push(p.name.clone());
        }
    }
    Ok(regressed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runs(values: &[(f64, f64)], better: Better) -> (Vec<Figures>, Vec<Figures>) {
        let one = |v: f64| {
            let mut f = Figures::default();
            f.add("x", v, better);
            f
        };
        (values.iter().map(|(b, _)| one(*b)).collect(), values.iter().map(|(_, h)| one(*h)).collect())
    }

    fn verdict(values: &[(f64, f64)], better: Better) -> Verdict {
        let (base, head) = runs(values, better);
        pair(&base, &head)[0].verdict(0.05)
    }

    #[test]
    fn a_figure_regresses_only_when_every_pair_puts_it_past_the_tolerance_in_its_bad_direction() {
        // Latency: higher is worse.
        assert_eq!(verdict(&[(10.0, 11.0), (10.0, 10.8)], Better::Lower), Verdict::Regressed);
        assert_eq!(verdict(&[(10.0, 11.0), (10.0, 10.2)], Better::Lower), Verdict::Same, "one pair disagrees");
        assert_eq!(verdict(&[(10.0, 9.0), (10.0, 9.4)], Better::Lower), Verdict::Better);
        // Throughput: lower is worse.
        assert_eq!(verdict(&[(100.0, 90.0), (110.0, 100.0)], Better::Higher), Verdict::Regressed);
        assert_eq!(verdict(&[(100.0, 97.0), (100.0, 96.0)], Better::Higher), Verdict::Same, "inside 5 %");
        assert_eq!(verdict(&[(0.0, 3.0)], Better::Lower), Verdict::Undefined);
    }

    #[test]
    fn ratios_are_taken_pair_by_pair() {
        let (base, head) = runs(&[(10.0, 12.0), (20.0, 22.0)], Better::Lower);
        let p = &pair(&base, &head)[0];
        assert_eq!(p.ratios(), Some(vec![1.2, 1.1]));
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
    }
}
