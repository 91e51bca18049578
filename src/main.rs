//! `overlap`: the command line. Thin glue over the library crates: argument parsing,
//! launching `mpiexec`, and printing.

mod cli;
mod launch;
mod progress;
mod run;
mod selftrace;
mod supervise;
mod trace;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    match cli::run(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("overlap: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
