//! The network model file: point-to-point latency and bandwidth per message size, as the
//! `pingpong` kernel measured them, for estimating how long a transfer takes.
//!
//! It lives here, beside the trace schema but outside it, because the kernels write it
//! and the analyzer reads it, and this crate is the one both depend on (the analyzer
//! without MPI). The format is specified in `docs/kernels.md`:
//!
//! ```json
//! {"format": "overlap-network-model", "version": 1,
//!  "source": {"kernel": "pingpong", "pattern": "single", "ranks": 2, "hosts": ["vm"]},
//!  "points": [{"bytes": 8, "latency_ns": 410.0, "bandwidth_bytes_per_s": 19512195.1}],
//!  "fit": {"latency_ns": 402.3, "ns_per_byte": 0.081}}
//! ```
//!
//! `points` are measured one-way times (half a round trip) by message size, in
//! increasing size; `fit` is the Hockney model `t(b) = latency_ns + b * ns_per_byte`
//! fitted to them. [`NetworkModel::transfer_ns`] interpolates between the measured points
//! and extrapolates with the fit's slope beyond the largest one.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The `format` field of every network model file.
pub const MODEL_FORMAT: &str = "overlap-network-model";
/// The version this code writes and reads.
pub const MODEL_VERSION: u32 = 1;
/// The largest model file read: a model holds a few dozen points, far below this.
pub const MODEL_MAX_BYTES: u64 = 16 << 20;

/// Where a model's points were measured.
///
/// Wire struct: a change means bumping [`MODEL_VERSION`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelSource {
    /// The kernel that measured it (`pingpong`).
    pub kernel: String,
    /// Its pattern (`single`: one pair, the others idle).
    pub pattern: String,
    /// Ranks of the run.
    pub ranks: u32,
    /// Hosts of the two ranks that measured, in rank order.
    pub hosts: Vec<String>,
}

/// One measured message size.
///
/// Wire struct: a change means bumping [`MODEL_VERSION`].
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelPoint {
    /// Message size.
    pub bytes: u64,
    /// One-way time of a message of that size, ns.
    pub latency_ns: f64,
    /// `bytes / latency`, bytes per second.
    pub bandwidth_bytes_per_s: f64,
}

/// The Hockney model `t(b) = latency_ns + b * ns_per_byte`.
///
/// Wire struct: a change means bumping [`MODEL_VERSION`].
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinearFit {
    /// Time of an empty message, ns.
    pub latency_ns: f64,
    /// Time per byte, ns (the inverse of the asymptotic bandwidth).
    pub ns_per_byte: f64,
}

impl LinearFit {
    /// Fits `t = a + b * bytes` to the points by least squares on the relative error
    /// (each point weighs `1 / t^2`), so that small messages weigh as much as large ones;
    /// a negative coefficient is set to zero and the other refitted.
    pub fn fit(points: &[ModelPoint]) -> LinearFit {
        let weight = |p: &ModelPoint| 1.0 / (p.latency_ns * p.latency_ns);
        let (mut sw, mut sx, mut sy, mut sxx, mut sxy) = (0.0, 0.0, 0.0, 0.0, 0.0);
        for p in points {
            let (w, x, y) = (weight(p), p.bytes as f64, p.latency_ns);
            sw += w;
            sx += w * x;
            sy += w * y;
            sxx += w * x * x;
            sxy += w * x * y;
        }
        let det = sw * sxx - sx * sx;
        let (a, b) = if det > 0.0 {
            ((sxx * sy - sx * sxy) / det, (sw * sxy - sx * sy) / det)
        } else {
            (f64::NAN, f64::NAN)
        };
        if a.is_finite() && b.is_finite() && a >= 0.0 && b >= 0.0 {
            return LinearFit {
                latency_ns: a,
                ns_per_byte: b,
            };
        }
        // One coefficient alone: a = sum(w y) / sum(w), or b = sum(w x y) / sum(w x x).
        let only_a = if sw > 0.0 { sy / sw } else { 0.0 };
        let only_b = if sxx > 0.0 { sxy / sxx } else { 0.0 };
        if a.is_finite() && a < 0.0 {
            LinearFit {
                latency_ns: 0.0,
                ns_per_byte: only_b.max(0.0),
            }
        } else {
            LinearFit {
                latency_ns: only_a.max(0.0),
                ns_per_byte: 0.0,
            }
        }
    }

    /// The model's time for `bytes`, ns.
    pub fn at(&self, bytes: u64) -> f64 {
        self.latency_ns + bytes as f64 * self.ns_per_byte
    }
}

/// A network model file.
///
/// Wire struct: a change means bumping [`MODEL_VERSION`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NetworkModel {
    /// Always [`MODEL_FORMAT`].
    pub format: String,
    /// The [`MODEL_VERSION`] it was written with.
    pub version: u32,
    /// Where it was measured.
    pub source: ModelSource,
    /// Measured sizes, in increasing size.
    pub points: Vec<ModelPoint>,
    /// The Hockney fit of the points.
    pub fit: LinearFit,
}

/// Why a network model cannot be read or used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ModelError {
    /// The file could not be read or written.
    #[error("{what} {}: {cause}", path.display())]
    Io {
        /// What was being done.
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// The cause, shown in the message (not chained, so it is not printed twice).
        cause: std::io::Error,
    },
    /// The file could not be written whole.
    #[error(transparent)]
    Output(#[from] crate::output::OutputError),
    /// The file could not be opened as an input (a fifo, a device, too large).
    #[error(transparent)]
    Input(#[from] crate::input::InputError),
    /// The file is not JSON of the expected shape.
    #[error("{}: not a network model: {cause}", path.display())]
    Parse {
        /// The file.
        path: PathBuf,
        /// The cause, shown in the message (not chained).
        cause: serde_json::Error,
    },
    /// Another format, or a version this code does not read.
    #[error("{}: format {format:?} version {version}, expected {MODEL_FORMAT:?} version {MODEL_VERSION}", path.display())]
    WrongFormat {
        /// The file.
        path: PathBuf,
        /// Its `format`.
        format: String,
        /// Its `version`.
        version: u32,
    },
    /// The points cannot make a model.
    #[error("{}: {reason}", path.display())]
    Invalid {
        /// The file (empty when the model was built in memory).
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
}

/// Why `points` cannot make a model, if they cannot.
fn check_points(points: &[ModelPoint]) -> Option<String> {
    if points.is_empty() {
        return Some("no measured points".into());
    }
    for (i, p) in points.iter().enumerate() {
        if !(p.latency_ns > 0.0 && p.latency_ns.is_finite()) {
            return Some(format!(
                "point {i} ({} bytes): latency {} ns is not a positive number",
                p.bytes, p.latency_ns
            ));
        }
        if !(p.bandwidth_bytes_per_s >= 0.0 && p.bandwidth_bytes_per_s.is_finite()) {
            return Some(format!(
                "point {i} ({} bytes): bandwidth {} is not a non-negative number",
                p.bytes, p.bandwidth_bytes_per_s
            ));
        }
        if i > 0 && p.bytes <= points[i - 1].bytes {
            return Some(format!(
                "point {i}: sizes must increase ({} bytes after {})",
                p.bytes,
                points[i - 1].bytes
            ));
        }
    }
    None
}

impl NetworkModel {
    /// A model of `points` (in increasing size), with its fit.
    pub fn new(source: ModelSource, points: Vec<ModelPoint>) -> Result<NetworkModel, ModelError> {
        if let Some(reason) = check_points(&points) {
            return Err(ModelError::Invalid {
                path: PathBuf::new(),
                reason,
            });
        }
        let fit = LinearFit::fit(&points);
        Ok(NetworkModel {
            format: MODEL_FORMAT.into(),
            version: MODEL_VERSION,
            source,
            points,
            fit,
        })
    }

    /// Reads and checks a model file.
    pub fn read(path: &Path) -> Result<NetworkModel, ModelError> {
        let bytes = crate::input::read_input(path, MODEL_MAX_BYTES, "network model")?;
        let text = String::from_utf8(bytes).map_err(|e| ModelError::Io {
            what: "reading",
            path: path.to_path_buf(),
            cause: std::io::Error::new(std::io::ErrorKind::InvalidData, e.utf8_error()),
        })?;
        NetworkModel::parse(&text, path)
    }

    /// Parses and checks a model from `text` (read from `path`, for messages).
    pub fn parse(text: &str, path: &Path) -> Result<NetworkModel, ModelError> {
        #[derive(Deserialize)]
        struct Head {
            format: String,
            version: u32,
        }
        let parse_error = |cause| ModelError::Parse {
            path: path.to_path_buf(),
            cause,
        };
        let head: Head = serde_json::from_str(text).map_err(parse_error)?;
        if head.format != MODEL_FORMAT || head.version != MODEL_VERSION {
            return Err(ModelError::WrongFormat {
                path: path.to_path_buf(),
                format: head.format,
                version: head.version,
            });
        }
        let model: NetworkModel = serde_json::from_str(text).map_err(parse_error)?;
        if let Some(reason) = check_points(&model.points) {
            return Err(ModelError::Invalid {
                path: path.to_path_buf(),
                reason,
            });
        }
        Ok(model)
    }

    /// Writes the model as pretty JSON.
    pub fn write(&self, path: &Path) -> Result<(), ModelError> {
        let text = serde_json::to_string_pretty(self).expect("a model always serializes") + "\n";
        Ok(crate::output::write_atomically(path, text.as_bytes())?)
    }

    /// Estimated one-way time of a `bytes` message, ns: linear between the two measured
    /// sizes around it, the smallest size's time below them, and beyond the largest the
    /// largest's time plus the fit's time per extra byte.
    pub fn transfer_ns(&self, bytes: u64) -> f64 {
        let pts = &self.points;
        let i = pts.partition_point(|p| p.bytes < bytes);
        if i == 0 {
            return pts[0].latency_ns;
        }
        if i == pts.len() {
            let last = pts[pts.len() - 1];
            return last.latency_ns + (bytes - last.bytes) as f64 * self.fit.ns_per_byte;
        }
        let (lo, hi) = (pts[i - 1], pts[i]);
        let f = (bytes - lo.bytes) as f64 / (hi.bytes - lo.bytes) as f64;
        lo.latency_ns + f * (hi.latency_ns - lo.latency_ns)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn point(bytes: u64, latency_ns: f64) -> ModelPoint {
        ModelPoint {
            bytes,
            latency_ns,
            bandwidth_bytes_per_s: bytes as f64 / latency_ns * 1e9,
        }
    }

    fn source() -> ModelSource {
        ModelSource {
            kernel: "pingpong".into(),
            pattern: "single".into(),
            ranks: 2,
            hosts: vec!["a".into(), "a".into()],
        }
    }

    #[test]
    fn fit_recovers_an_exact_hockney_model() {
        let pts: Vec<_> = (3..23)
            .map(|e| point(1 << e, 500.0 + 0.25 * (1u64 << e) as f64))
            .collect();
        let f = LinearFit::fit(&pts);
        assert!((f.latency_ns - 500.0).abs() < 1e-6, "{f:?}");
        assert!((f.ns_per_byte - 0.25).abs() < 1e-9, "{f:?}");
        assert!((f.at(1000) - 750.0).abs() < 1e-6);
    }

    #[test]
    fn fit_never_goes_negative() {
        // Times that fall with size would need a negative slope: latency alone remains.
        let f = LinearFit::fit(&[point(8, 1000.0), point(16, 900.0), point(32, 800.0)]);
        assert_eq!(f.ns_per_byte, 0.0);
        assert!(f.latency_ns > 800.0 && f.latency_ns < 1000.0, "{f:?}");
        // Pure bandwidth with a negative intercept: the slope alone remains.
        let f = LinearFit::fit(&[point(1000, 1.0), point(2000, 3000.0)]);
        assert_eq!(f.latency_ns, 0.0);
        assert!(f.ns_per_byte > 0.0);
    }

    #[test]
    fn estimates_interpolate_and_extrapolate() {
        let m = NetworkModel::new(
            source(),
            vec![point(8, 400.0), point(16, 500.0), point(32, 900.0)],
        )
        .unwrap();
        assert_eq!(m.transfer_ns(1), 400.0);
        assert_eq!(m.transfer_ns(8), 400.0);
        assert_eq!(m.transfer_ns(12), 450.0);
        assert_eq!(m.transfer_ns(32), 900.0);
        let beyond = m.transfer_ns(64);
        assert!((beyond - (900.0 + 32.0 * m.fit.ns_per_byte)).abs() < 1e-9);
    }

    #[test]
    fn round_trips_through_a_file_and_rejects_bad_ones() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("net.json");
        let m = NetworkModel::new(source(), vec![point(8, 400.0), point(16, 500.0)]).unwrap();
        m.write(&path).unwrap();
        assert_eq!(NetworkModel::read(&path).unwrap(), m);

        let text = std::fs::read_to_string(&path).unwrap();
        let other = text.replace("\"version\": 1", "\"version\": 9");
        let err = NetworkModel::parse(&other, &path).unwrap_err();
        assert!(err.to_string().contains("version 9"), "{err}");
        let unsorted = text.replace("\"bytes\": 16", "\"bytes\": 4");
        let err = NetworkModel::parse(&unsorted, &path).unwrap_err();
        assert!(err.to_string().contains("sizes must increase"), "{err}");
        let err = NetworkModel::parse("{\"format\": 3}", &path).unwrap_err();
        assert!(err.to_string().contains("not a network model"), "{err}");
        assert!(NetworkModel::new(source(), vec![]).is_err());
        let err = NetworkModel::read(&dir.path().join("missing.json")).unwrap_err();
        assert!(
            err.to_string().contains("missing.json: No such file"),
            "{err}"
        );
    }
}
