//! The terminal: switched to raw mode, the alternate screen and mouse reporting while the
//! TUI runs, and always given back, whatever ends it: quitting, a panic (the hook
//! restores before the message is printed, so it is readable), Ctrl-C (a key in raw
//! mode: it quits), and SIGTERM, SIGHUP, SIGINT or SIGQUIT from outside (restored, then
//! the process exits with 128 + the signal, as a shell expects).

use std::io::{self, IsTerminal, Stdout};
use std::sync::atomic::{AtomicBool, Ordering};

use ratatui::backend::CrosstermBackend;
use ratatui::crossterm::event::{self, DisableMouseCapture, EnableMouseCapture, Event};
use ratatui::crossterm::execute;
use ratatui::crossterm::terminal::{
    disable_raw_mode, enable_raw_mode, EnterAlternateScreen, LeaveAlternateScreen,
};
use ratatui::Terminal;
use signal_hook::consts::{SIGHUP, SIGINT, SIGQUIT, SIGTERM};

use crate::app::{App, Input};
use crate::Error;

/// True while the terminal is in the TUI's mode (restoring twice is harmless, but
/// printing escape sequences to a terminal never set up is not).
static ACTIVE: AtomicBool = AtomicBool::new(false);

/// Gives the terminal back: leaves the alternate screen, stops mouse reporting, shows
/// the cursor, ends raw mode. Safe to call more than once.
pub fn restore() {
    if ACTIVE.swap(false, Ordering::SeqCst) {
        let _ = execute!(
            io::stdout(),
            DisableMouseCapture,
            LeaveAlternateScreen,
            ratatui::crossterm::cursor::Show
        );
        let _ = disable_raw_mode();
    }
}

/// Restores the terminal when dropped (the normal end, and an early return).
struct Guard;

impl Drop for Guard {
    fn drop(&mut self) {
        restore();
    }
}

fn setup() -> Result<Terminal<CrosstermBackend<Stdout>>, Error> {
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        restore();
        hook(info);
    }));
    let mut signals = signal_hook::iterator::Signals::new([SIGTERM, SIGHUP, SIGINT, SIGQUIT])
        .map_err(|e| Error::Terminal(format!("installing the signal handlers: {e}")))?;
    std::thread::Builder::new()
        .name("tui-signals".into())
        .spawn(move || {
            if let Some(sig) = signals.forever().next() {
                restore();
                std::process::exit(128 + sig);
            }
        })
        .map_err(|e| Error::Terminal(format!("starting the signal thread: {e}")))?;
    enable_raw_mode().map_err(|e| Error::Terminal(format!("raw mode: {e}")))?;
    ACTIVE.store(true, Ordering::SeqCst);
    execute!(io::stdout(), EnterAlternateScreen, EnableMouseCapture)
        .map_err(|e| Error::Terminal(format!("alternate screen: {e}")))?;
    Terminal::new(CrosstermBackend::new(io::stdout())).map_err(|e| Error::Terminal(e.to_string()))
}

/// Runs the TUI on the terminal until the user quits.
pub fn run(mut app: App) -> Result<(), Error> {
    if !io::stdout().is_terminal() || !io::stdin().is_terminal() {
        return Err(Error::NotATerminal);
    }
    let mut terminal = setup()?;
    let _guard = Guard;
    let io_error = |e: io::Error| Error::Terminal(e.to_string());
    while !app.quit {
        terminal
            .draw(|f| crate::view::draw(f, &mut app))
            .map_err(io_error)?;
        let input = match event::read().map_err(io_error)? {
            Event::Key(k) => Input::Key(k),
            Event::Mouse(m) => Input::Mouse(m),
            Event::Resize(w, h) => Input::Resize(w, h),
            _ => continue,
        };
        app.handle(input);
    }
    Ok(())
}
