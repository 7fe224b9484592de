//! Saving and printing failures: the minimal program as a `.tc` file, its tile spec, the
//! `polyc` command line that reproduces it, both outcomes, and the case as JSON for
//! `polyc-fuzz replay`.

use crate::case::{Case, CaseResult, Tiles};
use crate::settings::{Settings, Summary};
use std::fmt::Write as _;
use std::path::PathBuf;

/// The `polyc run … --check` command line of `case`, run from its saved folder.
pub fn command(case: &Case, spec: Option<&str>) -> String {
    let mut parts: Vec<String> = Vec::new();
    if let Some((name, _)) = case.cfg.cc.wrapper() {
        // The saved folder holds the wrapper (`cc` with the fuzzer's flags last).
        parts.push(format!("CC=./{name}"));
    }
    parts.extend(["polyc".into(), "run".into(), "prog.tc".into()]);
    let params = case.prog.params_text();
    if !params.is_empty() {
        parts.push("--param".into());
        parts.push(params);
    }
    parts.extend(case.cfg.flags(spec.map(|_| "tiles.txt")));
    parts.push("--check".into());
    parts.join(" ")
}

/// The environment that draws the same cases: the seed, and the shares and the injected
/// fault where they differ from the defaults.
pub fn rerun_env(s: &Settings) -> String {
    let mut t = format!("POLYC_FUZZ_SEED={} ", s.seed);
    for (name, value, default) in [
        (
            "POLYC_FUZZ_GPU_SHARE",
            s.gpu_share,
            crate::settings::GPU_SHARE,
        ),
        (
            "POLYC_FUZZ_GEMMINI_SHARE",
            s.gemmini_share,
            crate::settings::GEMMINI_SHARE,
        ),
        ("POLYC_FUZZ_O3_SHARE", s.o3_share, crate::settings::O3_SHARE),
    ] {
        if value != default {
            t.push_str(&format!("{name}={value} "));
        }
    }
    if let Some(i) = s.inject {
        t.push_str(&format!("POLYC_FUZZ_INJECT={} ", i.name()));
    }
    t
}

/// The spec text a case ran with (its own text, or what a random spec became).
fn spec_of<'a>(case: &'a Case, result: &'a CaseResult) -> Option<&'a str> {
    match &case.cfg.tiles {
        Tiles::Text(t) => Some(t.as_str()),
        Tiles::Random(_) => result.spec.as_deref(),
        Tiles::Default => None,
    }
}

/// Writes the original and the shrunk case under `settings.out/SEED-INDEX/` and prints
/// the shrunk one. Returns the folder (`None` if it could not be written; the failure is
/// printed all the same).
pub fn save_failure(
    settings: &Settings,
    original: &Case,
    original_result: &CaseResult,
    small: &Case,
    small_result: &CaseResult,
    tried: usize,
) -> Option<PathBuf> {
    let dir = settings.out.join(original.id.replace(':', "-"));
    let spec = spec_of(small, small_result);
    let cmd = command(small, spec);
    let mut text = String::new();
    let _ = writeln!(
        text,
        "polyc-fuzz: FAILURE in case {} ({}), shrunk in {tried} runs",
        original.id,
        small_result.outcome.class()
    );
    let _ = writeln!(text, "--- prog.tc ---\n{}", small.prog.render().trim_end());
    if let Some(s) = spec {
        let _ = writeln!(text, "--- tiles.txt ---\n{}", s.trim_end());
    }
    let _ = writeln!(text, "--- command (in {}) ---\n{cmd}", dir.display());
    let _ = writeln!(
        text,
        "--- outcome ---\n{}",
        truncate(small_result.outcome.message(), 2000)
    );
    let _ = writeln!(
        text,
        "--- rerun the original case ---\n{}POLYC_FUZZ_CASE={} scripts/fuzz diff",
        rerun_env(settings),
        original.id.rsplit(':').next().unwrap_or("0")
    );
    println!("{text}");
    let write = || -> std::io::Result<()> {
        std::fs::create_dir_all(&dir)?;
        std::fs::write(dir.join("prog.tc"), small.prog.render())?;
        if let Some(s) = spec {
            std::fs::write(dir.join("tiles.txt"), s)?;
        }
        std::fs::write(dir.join("cmd.txt"), format!("{cmd}\n"))?;
        for mode in [small.cfg.cc, original.cfg.cc] {
            if let (Some((name, _)), Some(script)) = (mode.wrapper(), mode.script()) {
                use std::os::unix::fs::PermissionsExt;
                let w = dir.join(name);
                std::fs::write(&w, script)?;
                std::fs::set_permissions(&w, std::fs::Permissions::from_mode(0o755))?;
            }
        }
        std::fs::write(dir.join("report.txt"), &text)?;
        std::fs::write(dir.join("original.tc"), original.prog.render())?;
        if let Some(s) = spec_of(original, original_result) {
            std::fs::write(dir.join("original.tiles.txt"), s)?;
        }
        let ocmd = command(original, spec_of(original, original_result))
            .replace("prog.tc", "original.tc")
            .replace("tiles.txt", "original.tiles.txt");
        std::fs::write(
            dir.join("original.txt"),
            format!(
                "{ocmd}\n{}: {}\n",
                original_result.outcome.class(),
                original_result.outcome.message()
            ),
        )?;
        let json = serde_json::to_string_pretty(small).map_err(std::io::Error::other)?;
        std::fs::write(dir.join("case.json"), json)?;
        Ok(())
    };
    match write() {
        Ok(()) => Some(dir),
        Err(e) => {
            eprintln!("polyc-fuzz: could not save {}: {e}", dir.display());
            None
        }
    }
}

/// `s` cut to at most `n` bytes (on a character boundary), with an ellipsis.
fn truncate(s: &str, n: usize) -> String {
    if s.len() <= n {
        return s.to_string();
    }
    let mut end = n;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

/// The summary lines of a campaign.
pub fn summary_text(settings: &Settings, sum: &Summary) -> String {
    let mut t = String::new();
    let _ = writeln!(
        t,
        "polyc-fuzz: {} cases in {:.1} s, {:.1} CPU s (seed {}): {} passed, {} known, {} failed; targets cpu {} gpu {} gemmini {}; {} with a random tile spec, {} specs rejected (ran with the default policy)",
        sum.cases,
        sum.seconds,
        sum.cpu_seconds,
        settings.seed,
        sum.passed,
        sum.known.len(),
        sum.failures.len(),
        sum.per_target[0],
        sum.per_target[1],
        sum.per_target[2],
        sum.with_spec,
        sum.spec_rejected
    );
    for (id, k) in &sum.known {
        let _ = writeln!(t, "  known bug {} ({}): case {id}", k.name, k.what);
    }
    for f in &sum.failures {
        let _ = writeln!(t, "  FAILED: {}", f.display());
    }
    t
}
