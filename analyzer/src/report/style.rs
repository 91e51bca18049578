//! How the text report is drawn ([`Style`]): colour and bold only when asked for (the CLI
//! asks when stdout is a terminal and `NO_COLOR` is unset). A leaf every section shares.

/// How to render.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Style {
    /// ANSI colours and bold.
    pub color: bool,
}

impl Style {
    pub(super) fn paint(&self, code: &str, text: &str) -> String {
        if self.color {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_string()
        }
    }
    pub(super) fn bold(&self, text: &str) -> String {
        self.paint("1", text)
    }
    /// Green at or above 0.8 (POP's threshold), yellow above 0.6, red below.
    pub(super) fn efficiency(&self, v: f64, text: &str) -> String {
        let code = if v >= 0.8 {
            "32"
        } else if v >= 0.6 {
            "33"
        } else {
            "31"
        };
        self.paint(code, text)
    }
}
