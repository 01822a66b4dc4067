//! A module per rule, end to end on its fixture repositories, with its snapshots beside it
//! (`<id>/snapshots/`).

/// A test per (fixture case, check): `per_case! { [check, …] module => "case", … }` writes a
/// module per case holding one `#[test] fn check()` per check, each calling the rule module's
/// `check("case")`. One failing case then hides none of the others, and `cargo test --test it
/// fm001_inline` runs one case.
macro_rules! per_case {
    ($checks:tt $($module:ident => $case:literal),+ $(,)?) => {
        $(per_case!(@case $module $case $checks);)+
    };
    (@case $module:ident $case:literal [$($check:ident),+ $(,)?]) => {
        mod $module {
            $(
                #[test]
                fn $check() {
                    super::$check($case);
                }
            )+
        }
    };
}

mod fm001;
mod fm002;
mod fm003;
mod fm004;
mod fm005;
mod fm006;
mod fm007;
