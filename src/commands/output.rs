//! Printing a report, coloured as `--color` says.

use crate::cli::ColorWhen;

/// Print `text` to standard output, coloured as `when` says.
pub(crate) fn print_styled(text: &str, when: ColorWhen) {
    use std::io::Write as _;
    let mut out = anstream::AutoStream::new(std::io::stdout(), when.choice());
    let _ = out.write_all(text.as_bytes());
}

/// Print `text` to standard error, coloured as `when` says.
pub(crate) fn eprint_styled(text: &str, when: ColorWhen) {
    use std::io::Write as _;
    let mut out = anstream::AutoStream::new(std::io::stderr(), when.choice());
    let _ = out.write_all(text.as_bytes());
}
