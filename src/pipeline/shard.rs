//! Shards: `--shard i/n` and `--search-shard i/n` split a list of work items into `n`
//! deterministic parts balanced by estimated cost.
//!
//! The partition is greedy longest-processing-time (LPT): items are sorted by estimated
//! cost, largest first, ties broken by their key (ascending, byte order); each item in
//! turn goes to the part with the smallest total so far, ties broken by the lowest part
//! number. The result depends only on the keys and costs, never on the machine, the
//! order of the suite file's cases or the number of cores, so every shard of a job array
//! computes the same partition on its own. LPT's largest part is at most 4/3 of the best
//! possible one (Graham, 1969).

use miette::{miette, Result};
use std::fmt;
use std::str::FromStr;

/// One part of `count`: `index` is 1-based, as written on the command line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Shard {
    /// 1 ..= count.
    pub index: usize,
    /// How many parts.
    pub count: usize,
}

impl Shard {
    /// The whole list: part 1 of 1.
    pub const WHOLE: Shard = Shard { index: 1, count: 1 };

    /// Parses `i/n` for the flag `flag` (named in errors).
    pub fn parse(flag: &str, text: &str) -> Result<Shard> {
        let help = format!(
            "write {flag} i/n with 1 <= i <= n, e.g. {flag} 2/3 for the second of three parts"
        );
        let Some((i, n)) = text.split_once('/') else {
            return Err(miette!(
                help = help,
                "{flag}: `{text}` is not of the form i/n"
            ));
        };
        let num = |s: &str, what: &str| -> Result<usize> {
            s.trim().parse::<usize>().map_err(|_| {
                miette!(
                    help = help.clone(),
                    "{flag}: the {what} `{}` in `{text}` is not a whole number",
                    s.trim()
                )
            })
        };
        let index = num(i, "part")?;
        let count = num(n, "part count")?;
        if count == 0 {
            return Err(miette!(help = help, "{flag}: `{text}` asks for zero parts"));
        }
        if index == 0 || index > count {
            return Err(miette!(
                help = help,
                "{flag}: part {index} of `{text}` is not between 1 and {count} (parts are numbered from 1)"
            ));
        }
        Ok(Shard { index, count })
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl FromStr for Shard {
    type Err = miette::Report;
    fn from_str(s: &str) -> Result<Shard> {
        Shard::parse("--shard", s)
    }
}

/// The part (0-based) of every item, for items given as `(key, estimated cost)`: greedy
/// LPT as the module docs say. Keys should be distinct; equal keys with equal costs keep
/// their input order.
pub fn partition(items: &[(String, u64)], parts: usize) -> Vec<usize> {
    let parts = parts.max(1);
    let mut order: Vec<usize> = (0..items.len()).collect();
    order.sort_by(|&a, &b| {
        items[b]
            .1
            .cmp(&items[a].1)
            .then_with(|| items[a].0.cmp(&items[b].0))
            .then_with(|| a.cmp(&b))
    });
    let mut load = vec![0u128; parts];
    let mut out = vec![0usize; items.len()];
    for i in order {
        let (p, _) = load
            .iter()
            .enumerate()
            .min_by_key(|(p, l)| (**l, *p))
            .unwrap_or((0, &0));
        load[p] += u128::from(items[i].1);
        out[i] = p;
    }
    out
}

/// The indices of the items in `shard`, in input order.
pub fn select(items: &[(String, u64)], shard: Shard) -> Vec<usize> {
    partition(items, shard.count)
        .into_iter()
        .enumerate()
        .filter(|(_, p)| *p + 1 == shard.index)
        .map(|(i, _)| i)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn items(costs: &[u64]) -> Vec<(String, u64)> {
        costs
            .iter()
            .enumerate()
            .map(|(i, c)| (format!("k{i:02}"), *c))
            .collect()
    }

    #[test]
    fn lpt_balances_by_cost() {
        // 10, 9 and 8 open parts 0, 1 and 2; 7 joins the lightest (part 2: 15); the 1s go
        // to part 1 (9), then part 0 (10; tied with part 1 at 10, the lower part wins),
        // then part 1 (10).
        let it = items(&[10, 9, 8, 7, 1, 1, 1]);
        let p = partition(&it, 3);
        assert_eq!(p, vec![0, 1, 2, 2, 1, 0, 1]);
        let mut load = [0u64; 3];
        for (i, part) in p.iter().enumerate() {
            load[*part] += it[i].1;
        }
        assert_eq!(load, [11, 11, 15]);
    }

    #[test]
    fn equal_costs_go_round_robin_by_key() {
        let it = items(&[5, 5, 5, 5, 5]);
        assert_eq!(partition(&it, 2), vec![0, 1, 0, 1, 0]);
        assert_eq!(select(&it, Shard { index: 2, count: 2 }), vec![1, 3]);
    }

    #[test]
    fn every_item_in_exactly_one_shard() {
        let it = items(&[3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5]);
        let mut seen = vec![0; it.len()];
        for i in 1..=4 {
            for k in select(&it, Shard { index: i, count: 4 }) {
                seen[k] += 1;
            }
        }
        assert!(seen.iter().all(|&s| s == 1));
    }

    #[test]
    fn parse_errors() {
        let e = |t: &str| format!("{}", Shard::parse("--shard", t).unwrap_err());
        assert_eq!(
            Shard::parse("--shard", "2/3").unwrap(),
            Shard { index: 2, count: 3 }
        );
        assert_eq!(
            e("0/3"),
            "--shard: part 0 of `0/3` is not between 1 and 3 (parts are numbered from 1)"
        );
        assert_eq!(
            e("4/3"),
            "--shard: part 4 of `4/3` is not between 1 and 3 (parts are numbered from 1)"
        );
        assert_eq!(e("x"), "--shard: `x` is not of the form i/n");
        assert_eq!(
            e("x/3"),
            "--shard: the part `x` in `x/3` is not a whole number"
        );
        assert_eq!(e("1/0"), "--shard: `1/0` asks for zero parts");
    }
}
