//! Where a rank's calls were made, as OTF2 says it to a viewer: each site its calls
//! recorded, symbolized as the analysis symbolizes it (the Rust layer's listed source
//! locations, the preload's code addresses through the rank's code maps and the
//! objects' debug info), becomes a `SourceCodeLocation` definition, named on the
//! call's `Enter` by the attribute OTF2 defines for it (`SOURCE_CODE_LOCATION`), which
//! Vampir shows and other writers' readers take. A site without a file and line (no
//! debug info) has none.

use std::collections::HashMap;

use overlap_format::schema::{Event, ParamValue};

use super::defs::Builder;
use crate::model::RankTrace;
use crate::sites::{RankSymbols, Symbolizer};

/// The source code location (definition) of each site of `t`'s calls that has one.
pub(super) fn source_locations(
    t: &RankTrace<Vec<Event>>,
    b: &mut Builder,
    symbolizer: &mut Symbolizer,
) -> HashMap<u64, u32> {
    let code_maps = match t.header.params.get("code_maps") {
        Some(ParamValue::Text(maps)) => Some(maps.as_str()),
        _ => None,
    };
    let symbols = RankSymbols::listed(&t.sites, code_maps, &t.call_paths);
    let mut seen: HashMap<u64, Option<u32>> = HashMap::new();
    for e in &t.events {
        let Event::Call(c) = e else { continue };
        let Some(raw) = c.args.site else { continue };
        seen.entry(raw).or_insert_with(|| {
            let site = symbols.site(symbolizer, raw);
            match (site.file, site.line) {
                (Some(file), Some(line)) => Some(b.source_code_location(&file, line)),
                _ => None,
            }
        });
    }
    seen.into_iter()
        .filter_map(|(raw, place)| place.map(|p| (raw, p)))
        .collect()
}
