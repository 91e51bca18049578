//! What the terminal UI's tests share: the demo traces as runs, keys typed at the app,
//! and the screen drawn on ratatui's TestBackend.

#![allow(dead_code)]

use std::path::Path;

use overlap_tui::app::Input;
use overlap_tui::{App, Run};
use ratatui::backend::TestBackend;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::Terminal;

/// The demo trace of the false-overlap kernel, `naive` or `fixed` (4 ranks, 4
/// iterations, kept in `tests/data`).
pub fn demo(variant: &str) -> Run {
    let name = format!("false-overlap-{variant}.json");
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(&name);
    let loaded = overlap_analyzer::load::load(&path, &mut |_, _| {}).expect("the demo trace reads");
    Run::new(name, loaded.trace, &Default::default())
}

/// Types `keys` at the app, `\n` as Enter.
pub fn keys(app: &mut App, keys: &str) {
    for c in keys.chars() {
        let code = match c {
            '\n' => KeyCode::Enter,
            c => KeyCode::Char(c),
        };
        app.handle(Input::Key(KeyEvent::new(code, KeyModifiers::NONE)));
    }
}

/// The app drawn on a terminal of that size.
pub fn draw(app: &mut App, width: u16, height: u16) -> Terminal<TestBackend> {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).expect("a test terminal");
    // Twice: what the first frame learns of the geometry, the keys after it use.
    for _ in 0..2 {
        terminal
            .draw(|f| overlap_tui::view::draw(f, app))
            .expect("drawn");
    }
    terminal
}

/// The screen [`draw`] leaves, as text.
pub fn screen(app: &mut App, width: u16, height: u16) -> String {
    format!("{}", draw(app, width, height).backend())
}
