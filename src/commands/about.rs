//! What the binary says of itself: `explain`, `rules`, shell completions and the man page.

use clap::CommandFactory;

use crate::cli::Cli;

use super::status::{ExitStatus, UsageError};

/// `explain RULE`: the rule's document.
pub(crate) fn explain(rule: &str) -> Result<ExitStatus, UsageError> {
    match fluxmend::rules::by_id(rule) {
        Some(r) => {
            print!("{}", r.meta().doc_text());
            Ok(ExitStatus::Success)
        }
        None => {
            eprintln!("fluxmend: no rule {rule}; `fluxmend rules` lists them");
            Err(UsageError)
        }
    }
}

/// `rules`: one line per rule.
pub(crate) fn rules() -> ExitStatus {
    for r in fluxmend::rules::all() {
        let m = r.meta();
        println!("{}  {}  {}", m.id, m.name, m.summary);
    }
    ExitStatus::Success
}

/// `completion SHELL`: the completion script.
pub(crate) fn completion(shell: clap_complete::Shell) -> ExitStatus {
    clap_complete::generate(
        shell,
        &mut Cli::command(),
        "fluxmend",
        &mut std::io::stdout(),
    );
    ExitStatus::Success
}

/// `man [DIR]`: the man pages, written to DIR or the one page to standard output.
pub(crate) fn man(dir: Option<&std::path::Path>) -> Result<ExitStatus, UsageError> {
    let written = match dir {
        Some(dir) => clap_mangen::generate_to(Cli::command(), dir),
        None => clap_mangen::Man::new(Cli::command()).render(&mut std::io::stdout()),
    };
    match written {
        Ok(()) => Ok(ExitStatus::Success),
        Err(e) => {
            eprintln!("fluxmend: writing the man page: {e}");
            Err(UsageError)
        }
    }
}
