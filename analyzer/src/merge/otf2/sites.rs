//! Where a rank's calls were made, as OTF2 says it to a viewer: each site its calls
//! recorded, symbolized as the analysis symbolizes it (the Rust layer's listed source
//! locations, the preload's code addresses through the rank's code maps and the
//! objects' debug info), becomes a `SourceCodeLocation` definition, named on the
//! call's `Enter` by the attribute OTF2 defines for it (`SOURCE_CODE_LOCATION`), which
//! Vampir shows and other writers' readers take. A site without a file and line (no
//! debug info) has none.

use std::collections::HashMap;

use overlap_format::schema::ParamValue;

use super::defs::Builder;
use super::stream::RankIndex;
use crate::model::RankTrace;
use crate::sites::{RankSymbols, Symbolizer};

/// The source code location (definition) of each site of `t`'s calls that has one.
pub(super) fn source_locations(
    t: &RankTrace<RankIndex>,
    b: &mut Builder,
    symbolizer: &mut Symbolizer,
) -> HashMap<u64, u32> {
    let code_maps = match t.header.params.get("code_maps") {
        Some(ParamValue::Text(maps)) => Some(maps.as_str()),
        _ => None,
    };
    let symbols = RankSymbols::listed(&t.sites, code_maps, &t.call_paths);
    let mut raws: Vec<u64> = t.events.sites.iter().copied().collect();
    // In order, so that the definitions are numbered alike from run to run.
    raws.sort_unstable();
    let mut places = HashMap::new();
    for raw in raws {
        let site = symbols.site(symbolizer, raw);
        if let (Some(file), Some(line)) = (site.file, site.line) {
            places.insert(raw, b.source_code_location(&file, line));
        }
    }
    places
}
