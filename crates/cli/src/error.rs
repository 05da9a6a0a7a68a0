//! The error that ends a command with exit status 2, and how a file is
//! named in one. A leaf: it imports no file of the crate.

use sim::echo::echo_path;
use std::fmt;
use std::path::Path;

/// A file name for a message: escaped, and cut if absurdly long.
pub fn shown(path: &Path) -> String {
    echo_path(&path.display().to_string())
}

/// An error that ends the command with exit status 2.
#[derive(Debug)]
pub struct CliError(pub String);

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<scenario::ScenarioError> for CliError {
    fn from(e: scenario::ScenarioError) -> Self {
        CliError(e.to_string())
    }
}
