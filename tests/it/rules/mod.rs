//! A module per rule, end to end on its fixture repositories, with its snapshots beside it
//! (`<id>/snapshots/`).

mod fm001;
mod fm002;
mod fm003;
mod fm004;
mod fm005;
mod fm006;
mod fm007;
