//! `nssim lab` and `--lab`: the kernels of the lab (`lab` crate), and the
//! kernel checks of `run --on-kernel` and `conformance` run on them, each
//! kernel held to the profile of its release.

use crate::error::CliError;
use crate::options::Format;
use clap::Subcommand;
use serde_json::json;
use std::time::Instant;

#[derive(Subcommand)]
pub enum LabCommand {
    /// Get kernel images from Debian's archive into the lab's cache: the default
    /// eras (5.10, 6.1, 6.12, 6.18) without a NAME, else each NAME, an era or a
    /// kernel image package (`linux-image-6.16.12+deb13-cloud-amd64`).
    Fetch {
        #[arg(value_name = "NAME")]
        names: Vec<String>,
    },
    /// Build a kernel with fault injection (failslab, fail_page_alloc, fail-nth and
    /// the stack-trace filter) from Debian's 6.12 kernel source package, and keep it
    /// in the lab as `6.12-fault`: the kernel `fail_alloc` scenarios run on. About
    /// five minutes on two cores; needs make, gcc, flex, bison, bc, xz and libelf-dev.
    BuildFaultKernel {
        /// Compilers at once (default: the number of cores).
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=256))]
        jobs: Option<u32>,
    },
    /// Show each kernel of the lab: its name, release, the model's profile for it,
    /// where it came from, and its features.
    List {
        /// Output format: `json` prints a line per kernel.
        #[arg(long, value_enum, default_value = "text")]
        format: Format,
    },
}

fn lab_error(e: lab::LabError) -> CliError {
    CliError(format!("error: {e}"))
}

pub fn run(command: &LabCommand) -> Result<bool, CliError> {
    match command {
        LabCommand::Fetch { names } => fetch(names),
        LabCommand::List { format } => list(*format),
        LabCommand::BuildFaultKernel { jobs } => build_fault_kernel(*jobs),
    }
}

fn build_fault_kernel(jobs: Option<u32>) -> Result<bool, CliError> {
    let lab = lab::Lab::open();
    let archives = lab::apt::Archives::from_system().map_err(lab_error)?;
    let jobs = jobs.map_or_else(
        || std::thread::available_parallelism().map_or(1, |n| n.get()),
        |j| j as usize,
    );
    let log = lab.dir.join("build-fault-kernel.log");
    let _ = std::fs::remove_file(&log);
    eprintln!(
        "building {} ({jobs} jobs; the build's output goes to {})",
        lab::fault::NAME,
        log.display()
    );
    let started = Instant::now();
    let kernel = lab::fault::build(&lab, &archives, jobs, &log).map_err(lab_error)?;
    println!(
        "{:<10} {} (built from {} {}) in {:.0} s",
        kernel.name(),
        kernel.meta.release,
        kernel.meta.package,
        kernel.meta.version,
        started.elapsed().as_secs_f64()
    );
    Ok(true)
}

fn fetch(names: &[String]) -> Result<bool, CliError> {
    let lab = lab::Lab::open();
    let archives = lab::apt::Archives::from_system().map_err(lab_error)?;
    let names: Vec<String> = match names.is_empty() {
        true => lab::eras::ERAS.iter().map(|e| e.name.to_string()).collect(),
        false => names.to_vec(),
    };
    for name in &names {
        let started = Instant::now();
        let kernel = match lab::eras::era(name) {
            Some(era) => lab::apt::fetch_era(&lab, &archives, era),
            None if name.starts_with("linux-image-") => lab::apt::fetch_named(&lab, &archives, name),
            None => {
                let eras: Vec<&str> = lab::eras::ERAS.iter().map(|e| e.name).collect();
                return Err(CliError(format!(
                    "error: `{}` is neither an era of the lab ({}) nor a kernel image package (linux-image-...)",
                    sim::echo::echo(name),
                    eras.join(", ")
                )));
            }
        }
        .map_err(lab_error)?;
        println!(
            "{:<6} {} ({} {}) in {:.1} s",
            kernel.name(),
            kernel.meta.release,
            kernel.meta.package,
            kernel.meta.version,
            started.elapsed().as_secs_f64()
        );
    }
    println!("kept in {}", lab.kernels_dir().display());
    Ok(true)
}

fn features(k: &lab::Kernel, accel: lab::qemu::Accel) -> String {
    let mut f = vec![accel.name().to_string()];
    if k.fault_injection() {
        f.push("fault-injection".into());
    }
    f.join(", ")
}

fn list(format: Format) -> Result<bool, CliError> {
    let lab = lab::Lab::open();
    let kernels = lab.kernels().map_err(lab_error)?;
    let (accel, why) = lab::qemu::Accel::choose();
    match format {
        Format::Text => {
            println!(
                "{:<10} {:<28} {:<58} {:<26} {:<24} features",
                "name", "release", "profile", "origin", "version"
            );
            for k in &kernels {
                let origin = format!("{:?} {}", k.meta.origin, k.meta.suite).to_lowercase();
                println!(
                    "{:<10} {:<28} {:<58} {:<26} {:<24} {}",
                    k.name(),
                    k.meta.release,
                    k.held_to(),
                    origin,
                    k.meta.version,
                    features(k, accel)
                );
            }
            println!(
                "{} kernels in {}; VMs run under {} ({why})",
                kernels.len(),
                lab.kernels_dir().display(),
                accel.name()
            );
        }
        Format::Json => {
            for k in &kernels {
                println!(
                    "{}",
                    json!({
                        "name": k.name(),
                        "release": k.meta.release,
                        "profile": k.profile(),
                        "backports": k.backports(),
                        "package": k.meta.package,
                        "version": k.meta.version,
                        "suite": k.meta.suite,
                        "origin": k.meta.origin,
                        "fault_injection": k.fault_injection(),
                        "accel": accel.name(),
                    })
                );
            }
        }
    }
    Ok(true)
}

/// One lab kernel, booted and ready, with the profile it is held to.
pub struct LabKernel {
    pub kernel: lab::Kernel,
    pub booted: lab::Booted,
    pub profile: &'static str,
    pub patches: kernel::ActivePatches,
}

/// The patch toggles a lab kernel is held to: its backports, then `toggles`.
pub fn with_backports(kernel: &lab::Kernel, toggles: &[(String, bool)]) -> Vec<(String, bool)> {
    let backports = kernel
        .backports()
        .into_iter()
        .map(|p| (p.to_string(), true));
    backports.chain(toggles.iter().cloned()).collect()
}

impl LabKernel {
    /// How records name it: the kernel, then the profile it is held to.
    pub fn label(&self) -> String {
        let held_to = self.kernel.held_to();
        format!("{}:{}", self.kernel.name(), held_to)
    }
}

/// The lab's kernels `names` picks (`all`, names or releases), each
/// booted in turn and handed to `each`; the session's VMs are gone when
/// this returns.
pub fn on_each_kernel(
    names: &[String],
    toggles: &[(String, bool)],
    mut each: impl FnMut(&LabKernel) -> Result<bool, CliError>,
) -> Result<bool, CliError> {
    let lab = lab::Lab::open();
    let kernels = lab.select(names).map_err(lab_error)?;
    let session = lab::Session::new(lab).map_err(lab_error)?;
    let mut all_ok = true;
    for kernel in kernels {
        let booted = session.boot(&kernel).map_err(lab_error)?;
        let profile = kernel::catalog::profile_for_release(&booted.release)
            .map_or_else(kernel::catalog::host_profile, |p| p.name);
        let patches = kernel::resolve_patches(profile, &with_backports(&kernel, toggles))
            .map_err(|m| CliError(format!("error: profile {profile}: {m}")))?;
        eprintln!(
            "lab kernel {} (Linux {}, {} {}), profile {}: booted and saved in {:.1} s under {}",
            kernel.name(),
            booted.release,
            kernel.meta.package,
            kernel.meta.version,
            kernel.held_to(),
            booted.boot_time.as_secs_f64(),
            session.accel.name()
        );
        let lk = LabKernel {
            kernel,
            booted,
            profile,
            patches,
        };
        all_ok &= each(&lk)?;
    }
    Ok(all_ok)
}
