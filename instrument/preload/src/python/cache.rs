//! What the frame walk remembers, and which frames it passes over: plain logic, tested
//! without an interpreter. A code object's file and function are read once (the walk
//! holds a reference on the code object from then on, so its address is never reused
//! by another), and each of its lines that calls MPI becomes one [`NamedSite`]. Lines
//! are found by the call's instruction offset where the interpreter gives it (3.11+):
//! the interpreter computes a line by scanning the code's line table from its start,
//! a cost worth paying once per call instruction, not once per call. A call from an
//! instruction met before costs two lookups and no allocation.

use std::collections::HashMap;

use overlap_instrument::fxhash::FxHashMap;
use overlap_instrument::recorder::NamedSite;

/// What one frame of the walk is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Frame {
    /// Code of the MPI binding or of the interpreter's start-up (mpi4py's package,
    /// `runpy`, the frozen import machinery): the call belongs to a frame further out.
    PassedOver,
    /// The program's own line: the call's site.
    Site(&'static NamedSite),
    /// The program's code, at a line the interpreter cannot tell.
    NoLine,
}

/// Where in its code a frame is: what the cache looks calls up by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Position {
    /// The offset of the instruction it executes (`PyFrame_GetLasti`, 3.11+).
    Instruction(i32),
    /// Its line (`PyFrame_GetLineNumber`), where the instruction is not known.
    Line(i32),
}

/// A code object met by the walk.
struct Code {
    passed_over: bool,
    file: &'static str,
    function: &'static str,
    /// The sites of the instructions met so far (a function calls MPI from a few).
    instructions: Vec<(i32, &'static NamedSite)>,
    /// The sites of its lines met so far.
    lines: Vec<(u32, &'static NamedSite)>,
}

impl Code {
    /// The one site of `line` (0 or less: unknown).
    fn line(&mut self, line: i32) -> Option<&'static NamedSite> {
        let line = u32::try_from(line).ok().filter(|l| *l > 0)?;
        if let Some(&(_, site)) = self.lines.iter().find(|(l, _)| *l == line) {
            return Some(site);
        }
        let site = NamedSite::leak(self.file, line, self.function);
        self.lines.push((line, site));
        Some(site)
    }
}

/// What the interpreter says of a code object the first time the walk meets it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Described {
    pub(crate) file: String,
    pub(crate) function: String,
    /// The code is not the program's ([`passed_over`]).
    pub(crate) passed_over: bool,
}

/// The code objects met, by address, and the names they use.
#[derive(Default)]
pub(crate) struct Cache {
    codes: FxHashMap<usize, Code>,
    /// File and function names, each leaked once.
    names: HashMap<String, &'static str>,
}

impl Cache {
    /// The frame at `at` in the code object at address `code`. `describe` is asked
    /// about the code the first time it is met: it takes a reference on the code object
    /// when it answers (the cache keeps the address from then on), and `None` leaves the
    /// code unknown (asked again next time). `line` gives the frame's line, asked for
    /// only when `at` is an instruction not met yet.
    pub(crate) fn frame(
        &mut self,
        code: usize,
        at: Position,
        line: impl FnOnce() -> i32,
        describe: impl FnOnce() -> Option<Described>,
    ) -> Option<Frame> {
        if !self.codes.contains_key(&code) {
            let Described {
                file,
                function,
                passed_over,
            } = describe()?;
            let file = self.name(file);
            let function = self.name(function);
            self.codes.insert(
                code,
                Code {
                    passed_over,
                    file,
                    function,
                    instructions: Vec::new(),
                    lines: Vec::new(),
                },
            );
        }
        let c = self.codes.get_mut(&code)?;
        if c.passed_over {
            return Some(Frame::PassedOver);
        }
        let site = match at {
            Position::Line(l) => c.line(l),
            Position::Instruction(i) => match c.instructions.iter().find(|(at, _)| *at == i) {
                Some(&(_, site)) => Some(site),
                None => {
                    let site = c.line(line());
                    // An instruction without a line stays unknown: asked again.
                    if let Some(site) = site {
                        c.instructions.push((i, site));
                    }
                    site
                }
            },
        };
        Some(site.map_or(Frame::NoLine, Frame::Site))
    }

    fn name(&mut self, text: String) -> &'static str {
        if let Some(&known) = self.names.get(&text) {
            return known;
        }
        let leaked: &'static str = Box::leak(text.clone().into_boxed_str());
        self.names.insert(text, leaked);
        leaked
    }
}

/// True for a frame that is not the program's: code in one of the binding's package
/// directories `packages` (mpi4py's `__main__`, `run`, `futures`, `util`...), the
/// interpreter's `runpy` (`python -m mpi4py prog.py`, `python -m module`) and its frozen
/// modules (`<frozen importlib._bootstrap>`, under which `import mpi4py.MPI` runs
/// `MPI_Init`; `<frozen runpy>` from 3.11).
pub(crate) fn passed_over(file: &str, packages: &[String]) -> bool {
    file.starts_with("<frozen ")
        || file.ends_with("/runpy.py")
        || packages.iter().any(|p| file.starts_with(p.as_str()))
}

/// The package directory (ending in `/`) of a package whose `__init__.py` is `init`:
/// `None` for a namespace package or a module that is not a package's `__init__`.
pub(crate) fn package_dir(init: &str) -> Option<String> {
    let dir = init.strip_suffix("__init__.py")?;
    dir.ends_with('/').then(|| dir.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    const PKG: &str = "/venv/lib/python3.11/site-packages/mpi4py/";

    #[test]
    fn the_binding_and_the_interpreters_start_up_are_passed_over() {
        let packages = vec![PKG.to_string()];
        for file in [
            "/venv/lib/python3.11/site-packages/mpi4py/run.py",
            "/venv/lib/python3.11/site-packages/mpi4py/util/pkl5.py",
            "<frozen runpy>",
            "<frozen importlib._bootstrap>",
            "/usr/lib/python3.9/runpy.py",
        ] {
            assert!(passed_over(file, &packages), "{file}");
        }
        for file in [
            "prog.py",
            "/home/u/mpi4py-demo/prog.py",
            "/home/u/src/mpi4py_tests.py",
            "<string>",
            "<stdin>",
        ] {
            assert!(!passed_over(file, &packages), "{file}");
        }
        assert_eq!(
            package_dir(&format!("{PKG}__init__.py")).as_deref(),
            Some(PKG)
        );
        assert_eq!(package_dir("/x/mpi4py.py"), None);
    }

    /// A description as the walk makes it, with mpi4py's package at [`PKG`].
    fn described(file: &str, function: &str) -> Option<Described> {
        Some(Described {
            file: file.to_string(),
            function: function.to_string(),
            passed_over: passed_over(file, &[PKG.to_string()]),
        })
    }

    #[test]
    fn each_code_is_described_once_and_each_line_is_one_site() {
        let mut cache = Cache::default();
        let mut asked = 0;
        let mut describe = |file: &str, function: &str| {
            asked += 1;
            described(file, function)
        };
        let line = |l: i32| Position::Line(l);
        let no_line = || -> i32 { unreachable!("a line position needs no line") };
        let a = cache.frame(0x1000, line(12), no_line, || {
            describe("prog.py", "exchange")
        });
        let Some(Frame::Site(a)) = a else {
            panic!("{a:?}")
        };
        assert_eq!(
            (a.file(), a.line(), a.function()),
            ("prog.py", 12, "exchange")
        );
        let again = cache.frame(0x1000, line(12), no_line, || {
            describe("prog.py", "exchange")
        });
        assert_eq!(again, Some(Frame::Site(a)));
        assert!(std::ptr::eq(
            match again {
                Some(Frame::Site(s)) => s,
                other => panic!("{other:?}"),
            },
            a
        ));
        let b = cache.frame(0x1000, line(14), no_line, || {
            describe("prog.py", "exchange")
        });
        assert!(matches!(b, Some(Frame::Site(s)) if s.line() == 14 && !std::ptr::eq(s, a)));
        let main = cache.frame(0x2000, line(30), no_line, || describe("prog.py", "main"));
        let Some(Frame::Site(main)) = main else {
            panic!("{main:?}")
        };
        // One leaked copy of each name.
        assert!(std::ptr::eq(main.file(), a.file()));
        assert_eq!(
            cache.frame(0x3000, line(5), no_line, || {
                describe(&format!("{PKG}run.py"), "main")
            }),
            Some(Frame::PassedOver)
        );
        assert_eq!(
            cache.frame(0x2000, line(-1), no_line, || describe("prog.py", "main")),
            Some(Frame::NoLine)
        );
        assert_eq!(asked, 3, "one description per code object");
        // A code that cannot be described is not cached: asked again next time.
        assert_eq!(cache.frame(0x4000, line(1), no_line, || None), None);
        let later = cache.frame(0x4000, line(1), no_line, || described("p.py", "f"));
        assert!(matches!(later, Some(Frame::Site(s)) if s.file() == "p.py"));
    }

    #[test]
    fn an_instruction_asks_for_its_line_once_and_shares_the_lines_site() {
        let mut cache = Cache::default();
        let describe = || described("prog.py", "exchange");
        let mut asked = Vec::new();
        let mut at = |cache: &mut Cache, i: i32, line: i32| {
            let got = cache.frame(
                0x1000,
                Position::Instruction(i),
                || {
                    asked.push(i);
                    line
                },
                describe,
            );
            match got {
                Some(Frame::Site(s)) => Some(s),
                Some(Frame::NoLine) => None,
                other => panic!("{other:?}"),
            }
        };
        let a = at(&mut cache, 40, 12).expect("a site");
        let again = at(&mut cache, 40, 99).expect("cached");
        assert!(
            std::ptr::eq(a, again),
            "the instruction's line is not asked again"
        );
        // Two instructions of one line (a call spread over a line, a loop) share its site.
        let b = at(&mut cache, 52, 12).expect("a site");
        assert!(std::ptr::eq(a, b));
        assert_eq!(at(&mut cache, 60, 0), None, "no line: unknown");
        assert_eq!(at(&mut cache, 60, 13).map(|s| s.line()), Some(13));
        assert_eq!(asked, [40, 52, 60, 60]);
        // A line position shares the same sites.
        let by_line = cache.frame(0x1000, Position::Line(12), || 0, describe);
        assert!(matches!(by_line, Some(Frame::Site(s)) if std::ptr::eq(s, a)));
    }
}
