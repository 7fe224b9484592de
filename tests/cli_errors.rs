//! User errors through the binary: exit code 1, nothing on stdout, and an exact message
//! (plain text, since stderr is not a terminal here).

mod common;
use common::*;

const MM: &str = "examples/matmul.tc";

macro_rules! error_case {
    ($name:ident, [$($arg:expr),* $(,)?]) => {
        #[test]
        fn $name() {
            insta::assert_snapshot!(polyc_err(&[$($arg),*]));
        }
    };
}

// Malformed programs (each through compile; `dump` and `run` share the front end).
error_case!(undefined_tensor, [&fixture("undefined_tensor.tc")]);
error_case!(non_affine_index, [&fixture("non_affine.tc")]);
error_case!(cannot_infer_range, [&fixture("no_range.tc")]);
error_case!(type_mismatch, [&fixture("type_mismatch.tc")]);
error_case!(wrong_number_of_indices, [&fixture("wrong_arity.tc")]);
error_case!(syntax_error, [&fixture("syntax.tc")]);
error_case!(
    malformed_program_in_run,
    [
        "run",
        &fixture("undefined_tensor.tc"),
        "--param",
        "N=4",
        "--check"
    ]
);
error_case!(
    malformed_program_in_dump,
    ["dump", &fixture("non_affine.tc")]
);

// --param.
error_case!(param_unknown_size, [MM, "--param", "X=1"]);
error_case!(param_not_integer, [MM, "--param", "M=abc"]);
error_case!(param_zero, [MM, "--param", "M=0"]);
error_case!(param_negative, [MM, "--param", "M=-3"]);
error_case!(param_no_value, [MM, "--param", "M"]);
error_case!(param_twice, [MM, "--param", "M=4", "--param", "M=5"]);

// Scheduler and isl options.
error_case!(unknown_scheduler, [MM, "--scheduler", "foo"]);
error_case!(unknown_isl_option, [MM, "--isl-option", "foo=1"]);
error_case!(
    bad_isl_option_value,
    [MM, "--isl-option", "serialize_sccs=maybe"]
);
error_case!(
    akg_only_isl_option,
    [MM, "--isl-option", "nonneg_var_coefficient=1"]
);
error_case!(
    isl_option_without_value,
    [MM, "--isl-option", "serialize_sccs"]
);

// Entry, files, sizes, stages.
error_case!(unknown_entry, [MM, "--entry", "nosuch"]);
error_case!(missing_program_file, ["examples/no_such_program.tc"]);
error_case!(run_with_symbolic_sizes, ["run", MM, "--param", "M=4"]);
error_case!(dump_unknown_stage, ["dump", MM, "--stage", "nosuch"]);
error_case!(dump_unknown_format, ["dump", MM, "--format", "svg"]);

// Suites.
error_case!(
    suite_unknown_key,
    ["suite", &fixture("suite_unknown_key.yaml")]
);
error_case!(
    suite_missing_program,
    ["suite", &fixture("suite_missing_program.yaml")]
);
error_case!(
    suite_file_missing,
    ["suite", "tests/fixtures/no_such_suite.yaml"]
);

/// A unit error is exit 1 whatever the command; the same front-end error reads the same
/// through compile, dump and run.
#[test]
fn same_error_through_every_command() {
    let prog = fixture("type_mismatch.tc");
    let compile = polyc_err(&[&prog, "--param", "N=4"]);
    assert_eq!(polyc_err(&["compile", &prog, "--param", "N=4"]), compile);
    assert_eq!(polyc_err(&["dump", &prog, "--param", "N=4"]), compile);
    assert_eq!(polyc_err(&["run", &prog, "--param", "N=4"]), compile);
}

/// `--help` and `--version` are not errors.
#[test]
fn help_and_version_exit_zero() {
    let help = polyc_ok(&["--help"]);
    for cmd in ["compile", "run", "dump", "suite"] {
        assert!(help.contains(cmd), "{help}");
    }
    assert_eq!(polyc_ok(&["--version"]), "polyc 0.1.0\n");
}

error_case!(
    several_defs_without_entry,
    [&fixture("two_defs.tc"), "--param", "N=4"]
);
error_case!(
    unwritable_output,
    ["dump", MM, "-o", "/nonexistent/dir/tree.txt"]
);

/// `--entry` picks the def of a file that has several.
#[test]
fn entry_picks_a_def() {
    let c = polyc_ok(&[&fixture("two_defs.tc"), "--entry", "b", "--param", "N=4"]);
    let protos: Vec<&str> = c.lines().filter(|l| l.starts_with("void ")).collect();
    assert_eq!(
        protos,
        ["void b(const float *restrict X, float *restrict Z) {"]
    );
    let out = polyc_ok(&[
        "run",
        &fixture("two_defs.tc"),
        "--entry",
        "a",
        "--param",
        "N=4",
        "--check",
    ]);
    assert_eq!(out, "Y: max_abs_err=0.000e0 max_rel_err=0.000e0 ok\n");
}

// `polyc suite --via` is checked against the target before any run.
error_case!(
    suite_via_on_a_one_way_target,
    ["suite", "specs/suites/smoke.yaml", "--via", "c"]
);
