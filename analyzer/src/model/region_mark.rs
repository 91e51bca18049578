//! One `MPI_Pcontrol` call as a rank's timeline keeps it: the mark [`crate::regions`]
//! pairs into regions. A plain record of the model, so that the timeline holds it
//! without depending on the analysis of regions.

use overlap_format::schema::Nanos;

/// One `MPI_Pcontrol` call of a rank, on the run's timeline.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RegionMark {
    /// When the call was entered.
    pub start: Nanos,
    /// When it returned.
    pub end: Nanos,
    /// Its level.
    pub level: i32,
    /// The region it names, if any.
    pub name: Option<String>,
}
