//! Without an OpenCL driver, the OpenCL runner is an error saying what to install, never a
//! panic. A separate test binary, because the ICD loader reads `OCL_ICD_VENDORS` once per
//! process: pointing it at an empty directory hides every driver.

use targets::gpu::launch::Launch;
use targets::gpu::opencl_runner::{opencl_devices, run_opencl};

#[test]
fn no_opencl_platform_is_an_error_with_the_install_hint() {
    let empty = tempfile::tempdir().unwrap();
    std::env::set_var("OCL_ICD_VENDORS", empty.path());
    let plan = [Launch {
        kernel: "k".into(),
        grid: [1, 1, 1],
        block: [1, 1, 1],
        args: vec![],
        dynamic_shared: 0,
    }];
    let e = run_opencl("__kernel void k(void) {}", &plan, &mut [])
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        "no OpenCL platform on this machine (the ICD loader found no driver): install an \
         OpenCL driver: on Debian, `apt-get install pocl-opencl-icd ocl-icd-opencl-dev` \
         (scripts/install-deps does)"
    );
    assert_eq!(opencl_devices().unwrap_err().to_string(), e);
}
