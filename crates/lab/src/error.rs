//! What can go wrong in the lab, each with what a person needs to act on it.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum LabError {
    #[error("the lab's cache {}: {source}", path.display())]
    Cache {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{tool} is not installed here ({why}); {hint}")]
    MissingTool {
        tool: &'static str,
        why: String,
        hint: &'static str,
    },
    #[error("{command} failed: {detail}")]
    Command { command: String, detail: String },
    #[error("no Debian archive in this machine's apt sources ({0})")]
    NoArchive(String),
    #[error("no kernel package matches `{0}` in the lab's suites ({1})")]
    NoPackage(String, String),
    #[error("no kernel of the lab is named `{0}` (`nssim lab list` shows them; `nssim lab fetch {0}` may get it)")]
    UnknownKernel(String),
    #[error("the lab has no kernel yet: `nssim lab fetch` gets the default ones")]
    Empty,
    #[error("the VM of {kernel}: {detail}")]
    Vm { kernel: String, detail: String },
    #[error("the VM of {kernel}: the kernel panicked {when}: {console}")]
    KernelPanic {
        kernel: String,
        when: &'static str,
        console: String,
    },
}

impl LabError {
    pub(crate) fn cache(path: impl Into<PathBuf>, source: std::io::Error) -> LabError {
        LabError::Cache {
            path: path.into(),
            source,
        }
    }

    pub(crate) fn vm(kernel: &str, detail: impl Into<String>) -> LabError {
        LabError::Vm {
            kernel: kernel.to_string(),
            detail: detail.into(),
        }
    }
}
