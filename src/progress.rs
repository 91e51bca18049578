//! A progress bar on stderr for inputs that take longer than a second to read. It shows
//! only on a terminal, and only once a second has passed, so quick runs and logs stay
//! clean.

use std::io::Write;
use std::time::{Duration, Instant};

/// The bar.
pub struct Bar {
    label: String,
    started: Instant,
    last_draw: Option<Instant>,
    enabled: bool,
}

impl Bar {
    /// A bar for a job named `label`; draws nothing yet.
    pub fn new(label: &str) -> Bar {
        Bar {
            label: label.to_string(),
            started: Instant::now(),
            last_draw: None,
            enabled: crate::output::escapes_allowed(crate::output::stderr_is_terminal()),
        }
    }

    /// Reports `done` of `total` bytes.
    pub fn update(&mut self, done: u64, total: u64) {
        if !self.enabled || self.started.elapsed() < Duration::from_secs(1) {
            return;
        }
        if self
            .last_draw
            .is_some_and(|t| t.elapsed() < Duration::from_millis(100))
        {
            return;
        }
        self.last_draw = Some(Instant::now());
        let frac = if total == 0 {
            0.0
        } else {
            (done as f64 / total as f64).min(1.0)
        };
        let width = 30;
        let filled = (frac * width as f64) as usize;
        let mut err = std::io::stderr().lock();
        let _ = write!(
            err,
            "\r{} [{}{}] {:5.1}% of {:.1} MiB, {:.1} s",
            self.label,
            "=".repeat(filled),
            " ".repeat(width - filled),
            frac * 100.0,
            total as f64 / (1 << 20) as f64,
            self.started.elapsed().as_secs_f64()
        );
        let _ = err.flush();
    }

    /// Clears the bar if it was drawn.
    pub fn finish(&mut self) {
        if self.last_draw.is_some() {
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\r\x1b[2K");
            let _ = err.flush();
        }
    }
}
