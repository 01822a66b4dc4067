//! The commands: each one's steps, from the parsed command line to its report and exit status.
//!
//! Each file has one job and imports only the files listed after it: `check`, `fix`,
//! `simulate`, `graph`, `about` (`explain`, `rules`, completions, the man page), `steps` (what
//! the commands share: configuration and loading, the base revision, the model, rule selection,
//! findings below a path), `output` (coloured printing), `status` (the exit status and a usage
//! error).

mod about;
mod check;
mod fix;
mod graph;
mod output;
mod simulate;
mod status;
mod steps;

pub(crate) use status::ExitStatus;

use crate::cli::Command;

/// Run `command`; its report is printed, its errors said on standard error.
pub(crate) fn run(command: Command) -> ExitStatus {
    let result = match command {
        Command::Check(args) => check::check(&args),
        Command::Graph(args) => graph::graph(&args),
        Command::Fix(args) => fix::fix(&args),
        Command::Simulate(args) => simulate::simulate(&args),
        Command::Explain { rule } => about::explain(&rule),
        Command::Completion { shell } => Ok(about::completion(shell)),
        Command::Man { dir } => about::man(dir.as_deref()),
        Command::Rules => Ok(about::rules()),
    };
    result.unwrap_or_else(ExitStatus::from)
}
