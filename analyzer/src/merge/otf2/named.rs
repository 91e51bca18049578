//! What a rank's events name by place rather than in full (the buffers compute spans
//! declared, the groups of window calls, the regions of Pcontrol calls): each distinct
//! value once, in a property of the rank's process, and its place in the attribute of
//! each event that names it.

use std::collections::HashMap;

use overlap_format::schema::SpanBuffers;

/// Distinct values a rank's events name (the buffers compute spans declared, the
/// groups of window calls), each given its place, which the event's attribute says.
pub(super) struct Interned<T> {
    places: HashMap<T, u64>,
    /// The values, by place.
    pub values: Vec<T>,
}

impl<T> Default for Interned<T> {
    fn default() -> Self {
        Interned {
            places: HashMap::new(),
            values: Vec::new(),
        }
    }
}

impl<T: std::hash::Hash + Eq + Clone> Interned<T> {
    pub fn place(&mut self, v: &T) -> u64 {
        if let Some(p) = self.places.get(v) {
            return *p;
        }
        let p = self.values.len() as u64;
        self.places.insert(v.clone(), p);
        self.values.push(v.clone());
        p
    }
}

/// What a rank's events name by place.
#[derive(Default)]
pub(super) struct Named {
    /// The buffers of compute spans.
    pub buffers: Interned<SpanBuffers>,
    /// The groups of window calls.
    pub groups: Interned<Vec<i32>>,
    /// The regions of Pcontrol calls.
    pub regions: Interned<String>,
}
