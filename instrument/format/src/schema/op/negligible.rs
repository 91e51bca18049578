//! The MPI functions whose time is negligible by design: local and query calls that do
//! not communicate and return at once. Leaving them unrecorded does not move time from
//! MPI to computation, so the notes of calls overlap does not record leave them out.

/// Local and query calls whose time is negligible: they do not communicate and return
/// at once, so leaving them unrecorded does not move time from MPI to computation.
const NEGLIGIBLE: &[&str] = &[
    "MPI_Comm_rank",
    "MPI_Comm_size",
    "MPI_Comm_remote_size",
    "MPI_Comm_test_inter",
    "MPI_Comm_compare",
    "MPI_Comm_group",
    "MPI_Comm_remote_group",
    "MPI_Comm_create_keyval",
    "MPI_Comm_free_keyval",
    "MPI_Wtime",
    "MPI_Wtick",
    "MPI_Initialized",
    "MPI_Finalized",
    "MPI_Query_thread",
    "MPI_Is_thread_main",
    "MPI_Get_processor_name",
    "MPI_Get_version",
    "MPI_Get_library_version",
    "MPI_Get_count",
    "MPI_Get_elements",
    "MPI_Get_elements_x",
    "MPI_Get_address",
    "MPI_Address",
    "MPI_Aint_add",
    "MPI_Aint_diff",
    "MPI_Error_string",
    "MPI_Error_class",
    "MPI_Comm_delete_attr",
    "MPI_Win_delete_attr",
    "MPI_Grequest_start",
    "MPI_Grequest_complete",
    "MPI_Alloc_mem",
    "MPI_Free_mem",
    "MPI_Dims_create",
    "MPI_Cart_coords",
    "MPI_Cart_rank",
    "MPI_Cart_shift",
    "MPI_Cart_get",
    "MPI_Cartdim_get",
    "MPI_Topo_test",
    "MPI_Graph_neighbors",
    "MPI_Graph_neighbors_count",
    "MPI_Dist_graph_neighbors",
    "MPI_Dist_graph_neighbors_count",
    "MPI_Pack_size",
    "MPI_Keyval_create",
    "MPI_Keyval_free",
    "MPI_Attr_get",
    "MPI_Attr_put",
    "MPI_Test_cancelled",
    "MPI_Win_shared_query",
    "MPI_Win_attach",
    "MPI_Win_detach",
    "MPI_Buffer_attach",
];

/// Families of local calls (name prefixes) whose time is negligible: datatypes, groups,
/// info objects, error handlers, user operations, statuses, attributes and names.
const NEGLIGIBLE_FAMILIES: &[&str] = &[
    "MPI_Type_",
    "MPI_Group_",
    "MPI_Info_",
    "MPI_Errhandler_",
    "MPI_Op_",
    "MPI_Status_",
    "MPI_Comm_get_",
    "MPI_Comm_set_",
    "MPI_Comm_call_errhandler",
    "MPI_Win_get_",
    "MPI_Win_set_",
    "MPI_Win_create_keyval",
    "MPI_Win_free_keyval",
];

/// True when the MPI function `name`'s time is negligible: one of [`NEGLIGIBLE`], of a
/// family of [`NEGLIGIBLE_FAMILIES`], or a handle conversion between C and Fortran
/// (`MPI_Comm_f2c` and the like). A large-count form (`MPI_Get_count_c`) is as its
/// classic function.
pub fn negligible_mpi_call(name: &str) -> bool {
    let classic = name.strip_suffix("_c").unwrap_or(name);
    NEGLIGIBLE.contains(&classic)
        || NEGLIGIBLE_FAMILIES.iter().any(|f| classic.starts_with(f))
        || name.ends_with("_f2c")
        || name.ends_with("_c2f")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_calls_are_negligible_and_communication_is_not() {
        assert!(negligible_mpi_call("MPI_Comm_rank"));
        assert!(negligible_mpi_call("MPI_Type_commit"));
        assert!(negligible_mpi_call("MPI_Get_count_c"));
        assert!(negligible_mpi_call("MPI_Comm_f2c"));
        assert!(!negligible_mpi_call("MPI_Pack"));
        assert!(!negligible_mpi_call("MPI_File_write_all"));
        assert!(!negligible_mpi_call("MPI_Comm_idup"));
    }
}
