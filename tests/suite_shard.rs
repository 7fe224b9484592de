//! Suites across machines: `polyc suite FILE --shard i/n --json OUT`, `polyc suite merge`
//! (missing, duplicate and mismatched shards, the baseline diff), the sharded
//! `--search measure`; and two things a new user hit: files that are not UTF-8, and
//! `polyc explain` over a user's spec completed by the default policy.

mod common;
use common::*;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

fn json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).expect("result file")).expect("json")
}

/// key -> status of a result file's runs.
fn statuses(v: &Value) -> BTreeMap<String, String> {
    v["cases"]
        .as_array()
        .expect("cases")
        .iter()
        .map(|c| {
            (
                c["key"].as_str().unwrap().to_string(),
                c["status"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// The smoke suite as 3 shards in parallel processes, merged, gives the runs and statuses
/// of one unsharded run; the shards are disjoint, carry the same hash, and their estimated
/// costs are balanced as LPT guarantees.
#[test]
fn smoke_in_three_parallel_shards_merges_to_the_unsharded_run() {
    let dir = tempdir();
    let d = dir.path();
    let smoke = abs("specs/suites/smoke.yaml");
    let spawn = |args: Vec<String>| {
        std::process::Command::new(env!("CARGO_BIN_EXE_polyc"))
            .args(&args)
            .current_dir(d)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("polyc starts")
    };
    let mut children = Vec::new();
    for i in 1..=3 {
        children.push(spawn(vec![
            "suite".into(),
            smoke.clone(),
            "--shard".into(),
            format!("{i}/3"),
            "-j".into(),
            "1".into(),
            "--json".into(),
            format!("s{i}.json"),
        ]));
    }
    children.push(spawn(vec![
        "suite".into(),
        smoke.clone(),
        "-j".into(),
        "1".into(),
        "--json".into(),
        "whole.json".into(),
    ]));
    for c in children {
        let o = c.wait_with_output().expect("polyc ends");
        assert_code(&o, 0);
    }
    let whole = json(&d.join("whole.json"));
    assert_eq!(whole["shard"], "1/1");
    assert_eq!(whole["format"], "polyc-suite-result/1");
    assert_eq!(whole["polyc"], env!("CARGO_PKG_VERSION"));
    assert_eq!(whole["target"], "cpu");
    assert!(whole["host"]["hostname"]
        .as_str()
        .is_some_and(|h| !h.is_empty()));
    assert!(whole["host"]["cpu"].as_str().is_some_and(|h| !h.is_empty()));
    let runs = whole["suite"]["runs"].as_u64().unwrap() as usize;
    assert_eq!(runs, whole["cases"].as_array().unwrap().len());
    assert!(runs > 100, "the smoke suite has {runs} runs");

    let mut union = BTreeMap::new();
    let mut loads = Vec::new();
    let mut biggest = 0u64;
    for i in 1..=3 {
        let s = json(&d.join(format!("s{i}.json")));
        assert_eq!(s["shard"], format!("{i}/3"));
        assert_eq!(s["suite"]["hash"], whole["suite"]["hash"]);
        let mut load = 0u64;
        for c in s["cases"].as_array().unwrap() {
            let cost = c["estimated_us"].as_u64().unwrap();
            assert!(c["instances"].as_u64().unwrap() > 0, "{c}");
            load += cost;
            biggest = biggest.max(cost);
        }
        loads.push(load);
        for (k, st) in statuses(&s) {
            assert!(union.insert(k.clone(), st).is_none(), "{k} in two shards");
        }
    }
    assert_eq!(union, statuses(&whole));
    // LPT: the last run added to the fullest shard went to the emptiest one then.
    let (max, min) = (loads.iter().max().unwrap(), loads.iter().min().unwrap());
    assert!(
        max - min <= biggest,
        "loads {loads:?}, biggest run {biggest}"
    );

    let o = polyc_in(
        d,
        &[
            "suite",
            "merge",
            "s3.json",
            "s1.json",
            "s2.json",
            "--json",
            "merged.json",
        ],
    );
    assert_code(&o, 0);
    let out = stdout(&o);
    assert!(
        out.contains(&format!(
            "suite smoke: 3 shards merged: {runs} passed, 0 failed\n"
        )),
        "{out}"
    );
    let merged = json(&d.join("merged.json"));
    assert_eq!(merged["format"], "polyc-suite-merged/1");
    assert_eq!(statuses(&merged), statuses(&whole));
    let order: Vec<u64> = merged["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["index"].as_u64().unwrap())
        .collect();
    assert_eq!(order, (0..runs as u64).collect::<Vec<_>>());
    let shards: Vec<&str> = merged["shards"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["shard"].as_str().unwrap())
        .collect();
    assert_eq!(shards, ["1/3", "2/3", "3/3"]);
}

/// A small suite in `dir`: matmul at two shapes under two schedulers, and one run that
/// fails (a size matmul does not have). Returns the suite's file name.
fn tiny_suite(dir: &Path, extra: &str) -> String {
    let mm = abs("examples/matmul.tc");
    write(
        dir,
        "tiny.yaml",
        &format!(
            "name: tiny\nschedulers: [initial, isl]\ncases:\n  - program: {mm}\n    shapes: [{{M: 8, N: 4, K: 2}}, {{M: 3, N: 5, K: 7}}]\n  - program: {mm}\n    schedulers: [isl]\n    shapes: [{{M: 2, N: 2, K: 2, Z: 1}}]\n{extra}"
        ),
    );
    "tiny.yaml".into()
}

fn run_shard(dir: &Path, suite: &str, shard: &str, out: &str) -> std::process::Output {
    polyc_in(dir, &["suite", suite, "--shard", shard, "--json", out])
}

#[test]
fn shard_flag_errors() {
    let dir = tempdir();
    let suite = tiny_suite(dir.path(), "");
    let err = |s: &str| {
        let o = polyc_in(dir.path(), &["suite", &suite, "--shard", s]);
        assert_code(&o, 1);
        stderr(&o)
    };
    let help = "  help: write --shard i/n with 1 <= i <= n, e.g. --shard 2/3 for the second of three parts\n";
    assert_eq!(
        err("0/3"),
        format!("  × --shard: part 0 of `0/3` is not between 1 and 3 (parts are numbered from 1)\n{help}")
    );
    assert_eq!(
        err("4/3"),
        format!("  × --shard: part 4 of `4/3` is not between 1 and 3 (parts are numbered from 1)\n{help}")
    );
    assert_eq!(
        err("x"),
        format!("  × --shard: `x` is not of the form i/n\n{help}")
    );
    assert_eq!(
        err("1/y"),
        format!("  × --shard: the part count `y` in `1/y` is not a whole number\n{help}")
    );
}

/// Missing, duplicate and mismatched shards are errors that name them; a failing run
/// makes the merge exit 3.
#[test]
fn merge_checks_shards() {
    let dir = tempdir();
    let d = dir.path();
    let suite = tiny_suite(d, "");
    // Shard 1 and 2 of 3; the failing run is in one of the three.
    let mut failing = 0;
    for i in 1..=3 {
        let o = run_shard(d, &suite, &format!("{i}/3"), &format!("s{i}.json"));
        let code = code(&o);
        assert!(code == 0 || code == 3, "{}", stderr(&o));
        failing += (code == 3) as usize;
    }
    assert_eq!(failing, 1);

    let o = polyc_in(d, &["suite", "merge", "s1.json", "s3.json"]);
    assert_code(&o, 1);
    assert_eq!(
        stderr(&o),
        "  × shard 2/3 is missing\n  help: run the suite with --shard 2/3 and merge again with its result\n"
    );
    let o = polyc_in(d, &["suite", "merge", "s1.json"]);
    assert_code(&o, 1);
    assert_eq!(
        stderr(&o),
        "  × shards 2/3, 3/3 are missing\n  help: run the missing shards and merge again with their results\n"
    );
    let o = polyc_in(
        d,
        &["suite", "merge", "s1.json", "s2.json", "s2.json", "s3.json"],
    );
    assert_code(&o, 1);
    assert_eq!(
        stderr(&o),
        "  × shard 2/3 appears twice: s2.json and s2.json\n  help: give each shard's result once\n"
    );

    // The same suite cut in two: a different count.
    assert!(matches!(
        code(&run_shard(d, &suite, "1/2", "h1.json")),
        0 | 3
    ));
    let o = polyc_in(d, &["suite", "merge", "s1.json", "h1.json"]);
    assert_code(&o, 1);
    assert_eq!(
        stderr(&o),
        "  × h1.json is shard 1/2 but s1.json is shard 1/3: different splits\n  help: merge the shards of one i/n split\n"
    );

    // The suite file changes between shards: the hash differs.
    tiny_suite(d, "# a comment changes the hash\n");
    assert!(matches!(
        code(&run_shard(d, &suite, "2/3", "new2.json")),
        0 | 3
    ));
    let old = json(&d.join("s1.json"))["suite"]["hash"]
        .as_str()
        .unwrap()
        .to_string();
    let new = json(&d.join("new2.json"))["suite"]["hash"]
        .as_str()
        .unwrap()
        .to_string();
    assert_ne!(old, new);
    let o = polyc_in(d, &["suite", "merge", "s1.json", "new2.json", "s3.json"]);
    assert_code(&o, 1);
    assert_eq!(
        stderr(&o),
        format!(
            "  × new2.json: suite hash {} differs from s1.json's {}\n  help: the shards ran different suites (or programs); rerun them from one checkout\n",
            &new[..12],
            &old[..12]
        )
    );

    // All three: merged, with the failing run, exit 3.
    let o = polyc_in(d, &["suite", "merge", "s1.json", "s2.json", "s3.json"]);
    assert_code(&o, 3);
    let out = stdout(&o);
    assert!(
        out.contains("suite tiny: 3 shards merged: 4 passed, 1 failed\n"),
        "{out}"
    );
    assert!(
        out.contains("--param: `Z` is not a size of `matmul`"),
        "{out}"
    );
}

/// `--baseline`: new failures, fixed runs, moved times, runs only on one side; exact text.
#[test]
fn merge_diffs_against_a_baseline() {
    let dir = tempdir();
    let d = dir.path();
    let suite = tiny_suite(d, "");
    assert_code(&run_shard(d, &suite, "1/2", "a.json"), 3);
    let _ = run_shard(d, &suite, "2/2", "b.json");
    let o = polyc_in(
        d,
        &["suite", "merge", "a.json", "b.json", "--json", "now.json"],
    );
    assert_code(&o, 3);
    let now = json(&d.join("now.json"));
    let cases = now["cases"].as_array().unwrap().clone();
    let key = |i: usize| cases[i]["key"].as_str().unwrap().to_string();
    let failing = cases
        .iter()
        .position(|c| c["status"] != "ok")
        .expect("a failing run");
    assert_eq!(failing, 4);

    // The baseline: run 0 failed then (fixed now), run 1 compiled 4x faster then (slower
    // now), run 2 is missing from it, the failing run passed then (a new failure), and one
    // run exists only in it.
    let mut base = now.clone();
    let bc = base["cases"].as_array_mut().unwrap();
    bc[0]["status"] = "MISMATCH".into();
    let compile1 = cases[1]["compile_ms"].as_f64().unwrap();
    bc[1]["compile_ms"] = (compile1 / 4.0).into();
    bc[4]["status"] = "ok".into();
    let mut gone = bc[3].clone();
    gone["key"] = "gone.tc M=1 isl".into();
    bc.remove(2);
    bc.push(gone);
    std::fs::write(d.join("base.json"), base.to_string()).unwrap();

    let o = polyc_in(
        d,
        &[
            "suite",
            "merge",
            "a.json",
            "b.json",
            "--baseline",
            "base.json",
            "--json",
            "diff.json",
        ],
    );
    assert_code(&o, 3);
    let out = stdout(&o);
    let tail: String = out
        .lines()
        .skip_while(|l| !l.starts_with("baseline "))
        .map(|l| format!("{l}\n"))
        .collect();
    let before = compile1 / 4.0;
    assert_eq!(
        tail,
        format!(
            "baseline base.json: 1 new failure, 1 fixed, 1 time moved by more than 20% and 1 ms, 1 run not in the baseline, 1 run only in the baseline\n  new failure: {}: ok -> ERROR\n  fixed: {}: MISMATCH -> ok\n  compile slower: {}: {before:.3} -> {compile1:.3} ms (+300.0%)\n  not in the baseline: {}\n  only in the baseline: gone.tc M=1 isl\n",
            key(4),
            key(0),
            key(1),
            key(2),
        )
    );
    let diff = &json(&d.join("diff.json"))["baseline"];
    assert_eq!(diff["new_failures"][0]["key"], key(4).as_str());
    assert_eq!(diff["fixed"][0]["key"], key(0).as_str());
    assert_eq!(diff["moved"][0]["time"], "compile");
    assert_eq!(diff["added"][0], key(2).as_str());
    assert_eq!(diff["removed"][0], "gone.tc M=1 isl");

    // A shard is not a baseline.
    let o = polyc_in(
        d,
        &["suite", "merge", "a.json", "b.json", "--baseline", "a.json"],
    );
    assert_code(&o, 1);
    assert_eq!(
        stderr(&o),
        "  × --baseline a.json: it holds only shard 1/2 of the suite\n  help: give a merged result (polyc suite merge --json OUT) or a whole suite's result\n"
    );
}

/// `--search measure --search-shard i/n --search-json OUT`: two shards measure disjoint
/// halves of the model's best points, the same points an unsharded search measures; the
/// merge picks the fastest and writes its spec, which compiles and checks.
#[test]
fn sharded_measure_search_merges_to_the_fastest_point() {
    let dir = tempdir();
    let d = dir.path();
    write(d, "tiles.txt", "S_1: ?@L1, ?@L1, ?@L1\n");
    let mm = abs("examples/matmul.tc");
    let search = |extra: &[&str]| {
        let mut a = vec![
            mm.as_str(),
            "--param",
            "M=96,N=80,K=72",
            "--tile-spec",
            "tiles.txt",
            "--search",
            "measure",
            "--search-top",
            "4",
            "-o",
            "out.c",
        ];
        a.extend_from_slice(extra);
        let o = polyc_in(d, &a);
        assert_code(&o, 0);
        stderr(&o)
    };
    search(&["--search-json", "all.json"]);
    let err = search(&["--search-shard", "1/2", "--search-json", "p1.json"]);
    assert!(err.contains(", 2 measured in shard 1/2 (fastest "), "{err}");
    search(&["--search-shard", "2/2", "--search-json", "p2.json"]);

    let points = |f: &str| -> Vec<(u64, String)> {
        json(&d.join(f))["points"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| {
                (
                    p["rank"].as_u64().unwrap(),
                    p["label"].as_str().unwrap().to_string(),
                )
            })
            .collect()
    };
    let (p1, p2, all) = (points("p1.json"), points("p2.json"), points("all.json"));
    assert_eq!(p1.iter().map(|p| p.0).collect::<Vec<_>>(), [1, 3]);
    assert_eq!(p2.iter().map(|p| p.0).collect::<Vec<_>>(), [2, 4]);
    let mut both = [p1, p2].concat();
    both.sort();
    assert_eq!(both, all);

    let o = polyc_in(d, &["suite", "merge", "p1.json"]);
    assert_code(&o, 1);
    assert_eq!(
        stderr(&o),
        "  × shard 2/2 is missing\n  help: run the search with --search-shard 2/2 and merge again with its result\n"
    );

    let o = polyc_in(
        d,
        &[
            "suite",
            "merge",
            "p2.json",
            "p1.json",
            "--search-out",
            "best.txt",
            "--json",
            "m.json",
        ],
    );
    assert_code(&o, 0);
    let m = json(&d.join("m.json"));
    let ms: Vec<(u64, f64, String)> = m["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["rank"].as_u64().unwrap(),
                p["ms"].as_f64().unwrap(),
                p["spec"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let best = ms
        .iter()
        .min_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)))
        .unwrap();
    assert_eq!(m["picked"].as_u64().unwrap(), best.0);
    let out = stdout(&o);
    assert!(out.contains(&format!("picked #{} ", best.0)), "{out}");
    let written = std::fs::read_to_string(d.join("best.txt")).unwrap();
    assert!(written.ends_with(&best.2), "{written}");
    assert!(written.starts_with("# tile spec resolved by the tile-size search\n"));
    let o = polyc_in(
        d,
        &[&mm, "--param", "M=96,N=80,K=72", "--tile-spec", "best.txt"],
    );
    assert_code(&o, 0);
    let o = polyc_in(
        d,
        &[
            "run",
            &mm,
            "--param",
            "M=96,N=80,K=72",
            "--tile-spec",
            "best.txt",
            "--check",
        ],
    );
    assert_code(&o, 0);

    // Too many shards for the points measured.
    let o = polyc_in(
        d,
        &[
            &mm,
            "--param",
            "M=96,N=80,K=72",
            "--tile-spec",
            "tiles.txt",
            "--search",
            "measure",
            "--search-top",
            "2",
            "--search-shard",
            "3/3",
        ],
    );
    assert_code(&o, 1);
    assert_eq!(
        stderr(&o),
        "  × --search-shard 3/3: the search measures 2 points, none of them in this shard\n  help: use at most 2 shards, or measure more points with --search-top\n"
    );
    let o = polyc_in(
        d,
        &[
            &mm,
            "--param",
            "M=96,N=80,K=72",
            "--tile-spec",
            "tiles.txt",
            "--search-shard",
            "1/2",
        ],
    );
    assert_code(&o, 1);
    assert_eq!(
        stderr(&o),
        "  × --search-shard needs --search measure\n  help: shard the measured points with --search measure --search-shard i/n --search-json OUT\n"
    );
}

/// A program that is not UTF-8: the line, the column and the byte.
#[test]
fn non_utf8_file_is_a_located_error() {
    let dir = tempdir();
    std::fs::write(
        dir.path().join("latin1.tc"),
        b"def f(f32(N) A) -> (B) {\n  # caf\xe9 au lait\n  B(i) = A(i)\n}\n",
    )
    .unwrap();
    let o = polyc_in(dir.path(), &["latin1.tc"]);
    assert_code(&o, 1);
    assert_eq!(
        stderr(&o),
        "  × latin1.tc:2:8: the file is not UTF-8: byte 0xE9 is not part of a UTF-8 character
   ╭─[latin1.tc:2:8]
 1 │ def f(f32(N) A) -> (B) {
 2 │   # caf\u{FFFD} au lait
   ·        ┬
   ·        ╰── byte 0xE9
 3 │   B(i) = A(i)
   ╰────
  help: polyc reads UTF-8 text: re-encode the file as UTF-8 (e.g. with iconv) or remove the byte
"
    );
}

/// `polyc explain` over a user's spec that the default policy completes: one `tile spec:`
/// header, the user's statement first, then the policy's.
#[test]
fn explain_prints_one_tile_spec_header_when_the_policy_completes_a_spec() {
    let dir = tempdir();
    let mm2 = abs("examples/mm2.tc");
    let params = "NI=64,NJ=64,NK=64,NL=64";
    let default = polyc_ok(&["explain", &mm2, "--param", params]);
    let s3 = default
        .lines()
        .find(|l| l.starts_with("S_3: "))
        .expect("the default policy tiles S_3")
        .to_string();
    let spec = write(dir.path(), "s1.tiles", "S_1: 16@L1, 16@L1\n");
    let out = polyc_ok(&["explain", &mm2, "--param", params, "--tile-spec", &spec]);
    assert_eq!(out.matches("tile spec:").count(), 1, "{out}");
    assert!(
        out.starts_with(&format!(
            "tile spec:\nS_1: 16@L1, 16@L1\n{s3}\n\nS_0: tiled band #0\n"
        )),
        "{out}"
    );
}

/// When nothing is tiled, `polyc explain` says why (it used to blame --no-default-tiling
/// even when the flag was not given).
#[test]
fn explain_says_why_no_band_is_tiled() {
    let softmax = abs("examples/softmax.tc");
    let first = |extra: &[&str]| {
        let mut a = vec!["explain", softmax.as_str(), "--param", "R=16,N=64"];
        a.extend_from_slice(extra);
        polyc_ok(&a).lines().next().unwrap_or("").to_string()
    };
    assert_eq!(
        first(&[]),
        "no band is tiled: no --tile-spec, and the default policy finds no band to tile (it tiles outermost permutable bands whose extents are bound)"
    );
    assert_eq!(
        first(&["--no-default-tiling"]),
        "no band is tiled: no --tile-spec, and --no-default-tiling"
    );
}
