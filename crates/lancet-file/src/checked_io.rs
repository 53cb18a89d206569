//! Compressed buffers lance-encoding would trust: checked before it sees them.
//!
//! lance-encoding 14.0.2 sizes its output buffer from the length a compressed buffer
//! declares, unchecked: a zstd buffer's 8-byte prefix is passed to `Vec::reserve` (a hostile
//! prefix aborts the process; a fuzz input asked for 35.6 TB), an LZ4 block's 4-byte prefix to
//! a zero-filling `resize` (up to 4 GiB), and a zstd frame without the prefix is decoded
//! without bound. `docs/research/lance-encoding-compression.md` lists every site.
//!
//! Every read of a file's pages goes through [`CheckedIo`], which sees each byte range before
//! the decoder does. From the file's page metadata, read once at open, it knows:
//! - **prefix sites**: buffers lance-encoding decompresses whole, whose prefix is their first
//!   bytes (a mini-block page's `General` dictionary, a constant page's `General` levels),
//!   each with a bound on the decompressed size (from the dictionary's item count and value
//!   width where the encoding gives one, and never above [`MAX_DECOMPRESSED`]). A returned
//!   range holding such a prefix is checked before it is handed on;
//! - **refused pages**: pages whose compressed payloads sit inside chunks or per-value
//!   records (mini-block values or levels under `General`, full-zip `General`, `General`
//!   nested deeper, a 2.0 page naming zstd or LZ4, 2.3 planar pages). lance writes these only
//!   when a field's metadata asks for compression; lancet does not bound them yet, so reading
//!   one is a typed error rather than a possible abort. Opening the file still works.
//!
//! The check costs one map lookup per requested range; nothing extra is read.

use std::collections::BTreeMap;
use std::ops::Range;
use std::sync::Arc;

use bytes::Bytes;
use futures::future::BoxFuture;
use futures::FutureExt;
use lance_encoding::decoder::{PageEncoding, PageInfo};
use lance_encoding::format::metadata::{
    compressive_encoding::Compression, page_layout::Layout, CompressiveEncoding, PageLayout,
};
use lance_encoding::EncodingsIo;
use prost::Message;

/// No buffer decompresses past this (a page of lancet's or Lance's default writers is a few
/// MiB; a dictionary is capped at 8 MiB of values by Lance's writer).
pub const MAX_DECOMPRESSED: u64 = 128 << 20;
/// zstd frame magic (a buffer starting with it was written without the length prefix).
const ZSTD_MAGIC: u32 = 0xFD2F_B528;
/// `CompressionScheme` values of the buffer compression message.
const LZ4: i32 = 1;
const ZSTD: i32 = 2;

/// One buffer lance-encoding decompresses whole.
#[derive(Debug, Clone)]
struct Site {
    what: String,
    scheme: i32,
    /// Largest decompressed size the page allows.
    bound: u64,
}

/// How large a chunk's decompressed values may be, from the encoding inside `General`.
#[derive(Debug, Clone, Copy)]
enum ValueBound {
    /// Fixed-width values of this many bits.
    Bits(u64),
    /// Offsets and bytes of narrow values (mini-block holds values under 256 bytes unless a
    /// field asks otherwise; 4 KiB each is allowed).
    Variable,
    /// Anything else: [`MAX_DECOMPRESSED`].
    Unknown,
}

/// A mini-block page whose chunks hold compressed values or levels.
#[derive(Debug, Clone)]
struct ChunkedPage {
    what: String,
    /// Chunk metadata words (buffer 0) and chunk data (buffer 1): (position, size).
    meta: (u64, u64),
    data: (u64, u64),
    large: bool,
    num_buffers: u64,
    has_rep: bool,
    has_def: bool,
    num_items: u64,
    value: Option<(i32, ValueBound)>,
    rep: Option<i32>,
    def: Option<i32>,
}

/// One chunk of a chunked page: absolute start, length, values in it.
#[derive(Debug, Clone, Copy)]
struct Chunk {
    start: u64,
    len: u64,
    items: u64,
}

/// What lancet knows about a file's compressed buffers, by absolute file offset.
#[derive(Debug, Default)]
pub(crate) struct CompressedPages {
    sites: BTreeMap<u64, Site>,
    /// Buffers of refused pages: (start, end, why).
    refused: Vec<(u64, u64, String)>,
    /// Chunked pages by the start of their chunk data.
    chunked: BTreeMap<u64, ChunkedPage>,
    /// Chunk tables read so far, by the start of the page's chunk data.
    tables: std::sync::Mutex<std::collections::HashMap<u64, Arc<Vec<Chunk>>>>,
}

fn ceil8(bits: u64) -> u64 {
    bits.div_ceil(8)
}

/// The `General` node at the top of `e`, if any.
fn general(e: &CompressiveEncoding) -> Option<&lance_encoding::format::metadata::General> {
    match e.compression.as_ref()? {
        Compression::General(g) => Some(g),
        _ => None,
    }
}

/// Whether `e` has a `General` node anywhere.
fn has_general(e: &CompressiveEncoding) -> bool {
    fn walk(e: &CompressiveEncoding) -> bool {
        use Compression as C;
        match e.compression.as_ref() {
            None => false,
            Some(C::General(_)) => true,
            Some(C::Variable(v)) => v.offsets.as_deref().is_some_and(walk),
            Some(C::Dictionary(d)) => {
                d.indices.as_deref().is_some_and(walk) || d.items.as_deref().is_some_and(walk)
            }
            Some(C::Rle(r)) => {
                r.values.as_deref().is_some_and(walk) || r.run_lengths.as_deref().is_some_and(walk)
            }
            Some(C::ByteStreamSplit(b)) => b.values.as_deref().is_some_and(walk),
            Some(C::FixedSizeList(f)) => f.values.as_deref().is_some_and(walk),
            Some(C::PackedStruct(p)) => p.values.as_deref().is_some_and(walk),
            Some(C::Fsst(f)) => f.values.as_deref().is_some_and(walk),
            Some(C::OutOfLineBitpacking(o)) => o.values.as_deref().is_some_and(walk),
            Some(C::Delta(d)) => d.deltas.as_deref().is_some_and(walk),
            Some(C::VariablePackedStruct(v)) => {
                v.fields.iter().any(|f| f.value.as_ref().is_some_and(walk))
            }
            Some(_) => false,
        }
    }
    walk(e)
}

/// Largest decompressed size of a dictionary of `items` values encoded as `inner`.
fn dictionary_bound(inner: Option<&CompressiveEncoding>, items: u64) -> u64 {
    let bound = match inner.and_then(|e| e.compression.as_ref()) {
        Some(Compression::Flat(f)) => ceil8(items.saturating_mul(f.bits_per_value)),
        // 8-byte header, one offset per item and one more, at most 16 MiB of values
        Some(Compression::Variable(_)) => items
            .saturating_add(3)
            .saturating_mul(8)
            .saturating_add(16 << 20),
        _ => MAX_DECOMPRESSED,
    };
    bound.saturating_add(64).min(MAX_DECOMPRESSED)
}

impl CompressedPages {
    /// Reads every page's layout (metadata only).
    pub(crate) fn of_pages<'a>(pages: impl Iterator<Item = (usize, usize, &'a PageInfo)>) -> Self {
        let mut out = Self::default();
        for (c, p, page) in pages {
            let buffers: Vec<(u64, u64)> = page.buffer_offsets_and_sizes.to_vec();
            let what = format!("column {c} page {p}");
            match &page.encoding {
                PageEncoding::Structural(layout) => out.structural(&what, layout, &buffers),
                PageEncoding::Legacy(encoding) => {
                    let bytes = encoding.encode_to_vec();
                    let names = |needle: &[u8]| bytes.windows(needle.len()).any(|w| w == needle);
                    if names(b"zstd") || names(b"lz4") {
                        out.refuse(&what, &buffers, "a 2.0 page with compressed buffers");
                    }
                }
                _ => out.refuse(&what, &buffers, "a 2.3 planar page"),
            }
        }
        out
    }

    fn refuse(&mut self, what: &str, buffers: &[(u64, u64)], why: &str) {
        for (pos, size) in buffers {
            self.refused.push((
                *pos,
                pos.saturating_add(*size),
                format!("{what}: {why} (lancet does not bound its decompressed sizes)"),
            ));
        }
    }

    fn site(
        &mut self,
        what: String,
        buffers: &[(u64, u64)],
        k: usize,
        g: &lance_encoding::format::metadata::General,
        bound: u64,
    ) {
        let Some((pos, size)) = buffers.get(k).copied() else {
            return;
        };
        let scheme = g.compression.as_ref().map_or(0, |c| c.scheme);
        if size > 0 {
            self.sites.insert(
                pos,
                Site {
                    what,
                    scheme,
                    bound,
                },
            );
        }
    }

    /// A mini-block page whose values or levels are `General`: its chunks are checked when
    /// read (a nested `General` is refused).
    fn mini_block_chunks(
        &mut self,
        what: &str,
        m: &lance_encoding::format::metadata::MiniBlockLayout,
        buffers: &[(u64, u64)],
    ) {
        let top = |e: &Option<CompressiveEncoding>| -> Result<Option<i32>, ()> {
            let Some(e) = e else { return Ok(None) };
            match general(e) {
                Some(g) if !g.values.as_deref().is_some_and(has_general) => {
                    Ok(Some(g.compression.as_ref().map_or(0, |c| c.scheme)))
                }
                Some(_) => Err(()),
                None if has_general(e) => Err(()),
                None => Ok(None),
            }
        };
        let (Ok(value), Ok(rep), Ok(def)) = (
            top(&m.value_compression),
            top(&m.rep_compression),
            top(&m.def_compression),
        ) else {
            self.refuse(what, buffers, "nested compression in mini-block chunks");
            return;
        };
        if value.is_none() && rep.is_none() && def.is_none() {
            return;
        }
        let (Some(meta), Some(data)) = (buffers.first().copied(), buffers.get(1).copied()) else {
            self.refuse(what, buffers, "a mini-block page without its chunk buffers");
            return;
        };
        let bound = match m
            .value_compression
            .as_ref()
            .and_then(general)
            .and_then(|g| g.values.as_deref())
            .and_then(|e| e.compression.as_ref())
        {
            Some(Compression::Flat(f)) => ValueBound::Bits(f.bits_per_value),
            Some(Compression::Variable(_)) => ValueBound::Variable,
            _ => ValueBound::Unknown,
        };
        self.chunked.insert(
            data.0,
            ChunkedPage {
                what: what.to_string(),
                meta,
                data,
                large: m.has_large_chunk,
                num_buffers: m.num_buffers,
                has_rep: m.rep_compression.is_some(),
                has_def: m.def_compression.is_some(),
                num_items: m.num_items,
                value: value.map(|s| (s, bound)),
                rep,
                def,
            },
        );
    }

    /// The chunked pages whose chunk data `range` touches.
    fn chunked_in(&self, range: &Range<u64>) -> Vec<&ChunkedPage> {
        // chunk buffers of distinct pages are disjoint, so their ends ascend with their starts
        self.chunked
            .range(..range.end)
            .rev()
            .take_while(|(start, p)| start.saturating_add(p.data.1) > range.start)
            .map(|(_, p)| p)
            .collect()
    }

    fn table(&self, data_start: u64) -> Option<Arc<Vec<Chunk>>> {
        self.tables.lock().ok()?.get(&data_start).cloned()
    }

    fn set_table(&self, data_start: u64, table: Arc<Vec<Chunk>>) {
        if let Ok(mut t) = self.tables.lock() {
            t.insert(data_start, table);
        }
    }

    fn structural(&mut self, what: &str, layout: &PageLayout, buffers: &[(u64, u64)]) {
        match layout.layout.as_ref() {
            None => {}
            Some(Layout::MiniBlockLayout(m)) => {
                self.mini_block_chunks(what, m, buffers);
                if let Some(d) = &m.dictionary {
                    match general(d) {
                        Some(g) if g.values.as_deref().is_some_and(has_general) => {
                            self.refuse(what, buffers, "a doubly compressed dictionary")
                        }
                        Some(g) => {
                            let bound =
                                dictionary_bound(g.values.as_deref(), m.num_dictionary_items);
                            self.site(format!("{what} dictionary"), buffers, 2, g, bound);
                        }
                        None if has_general(d) => {
                            self.refuse(what, buffers, "a nested compressed dictionary")
                        }
                        None => {}
                    }
                }
            }
            Some(Layout::FullZipLayout(f))
                if f.value_compression.as_ref().is_some_and(has_general) =>
            {
                self.refuse(what, buffers, "compressed full-zip values");
            }
            Some(Layout::FullZipLayout(_)) => {}
            Some(Layout::ConstantLayout(c)) => {
                for (k, e, n) in [
                    (0, &c.rep_compression, c.num_rep_values),
                    (1, &c.def_compression, c.num_def_values),
                ] {
                    let Some(e) = e else { continue };
                    match general(e) {
                        Some(g) if !g.values.as_deref().is_some_and(has_general) => {
                            // levels decode to u16
                            let bound =
                                n.saturating_mul(2).saturating_add(64).min(MAX_DECOMPRESSED);
                            self.site(format!("{what} levels"), buffers, k, g, bound);
                        }
                        Some(_) => self.refuse(what, buffers, "doubly compressed levels"),
                        None if has_general(e) => {
                            self.refuse(what, buffers, "nested compressed levels")
                        }
                        None => {}
                    }
                }
            }
            Some(Layout::BlobLayout(b)) => {
                if let Some(inner) = b.inner_layout.as_deref() {
                    self.structural(what, inner, buffers);
                }
            }
        }
    }

    /// Checks the bytes `data` returned for `range` against every site and refused buffer it
    /// covers.
    fn check(&self, range: &Range<u64>, data: &Bytes) -> Result<(), String> {
        for (start, end, why) in &self.refused {
            if range.start < *end && *start < range.end {
                return Err(why.clone());
            }
        }
        for page in self.chunked_in(range) {
            let table = self
                .table(page.data.0)
                .ok_or_else(|| format!("{}: chunks read before their chunk table", page.what))?;
            for chunk in table.iter() {
                let end = chunk.start.saturating_add(chunk.len);
                if end <= range.start || chunk.start >= range.end {
                    continue;
                }
                if chunk.start < range.start || end > range.end {
                    return Err(format!("{}: a read of part of a chunk", page.what));
                }
                let at = usize::try_from(chunk.start - range.start).unwrap_or(usize::MAX);
                let len = usize::try_from(chunk.len).unwrap_or(usize::MAX);
                let bytes = at
                    .checked_add(len)
                    .and_then(|e| data.get(at..e))
                    .ok_or_else(|| format!("{}: a chunk past the bytes read", page.what))?;
                check_chunk(page, chunk, bytes)?;
            }
        }
        for (pos, site) in self.sites.range(range.start..range.end) {
            let Some(at) = pos
                .checked_sub(range.start)
                .and_then(|a| usize::try_from(a).ok())
            else {
                continue;
            };
            let head = data.get(at..).unwrap_or_default();
            check_prefix(site, head)?;
        }
        Ok(())
    }
}

/// The chunks of `page` from its metadata words (`Words` of lance-encoding: u16, or u32 for
/// large chunks; low 4 bits the log2 of the chunk's values, the rest its size in 8-byte
/// units minus one). The sizes must cover the chunk data exactly and the value counts the
/// page's items.
fn chunk_table(page: &ChunkedPage, meta: &[u8]) -> Result<Vec<Chunk>, String> {
    let width = if page.large { 4 } else { 2 };
    if !meta.len().is_multiple_of(width) {
        return Err(format!(
            "{}: chunk metadata of {} bytes is not whole words",
            page.what,
            meta.len()
        ));
    }
    let words: Vec<u64> = meta
        .chunks_exact(width)
        .map(|w| {
            if page.large {
                u64::from(lancet_proto::le::u32_at(w, 0).unwrap_or(0))
            } else {
                u64::from(lancet_proto::le::u16_at(w, 0).unwrap_or(0))
            }
        })
        .collect();
    let mut out = Vec::with_capacity(words.len());
    let (mut at, mut counted) = (page.data.0, 0u64);
    for (i, w) in words.iter().enumerate() {
        let len = ((w >> 4) + 1) * 8;
        let items = if i + 1 < words.len() {
            let log = w & 0xf;
            if log == 0 {
                return Err(format!("{}: chunk {i} holds no values", page.what));
            }
            1u64 << log
        } else {
            page.num_items
                .checked_sub(counted)
                .ok_or_else(|| format!("{}: chunks hold more values than the page", page.what))?
        };
        counted = counted.saturating_add(items);
        out.push(Chunk {
            start: at,
            len,
            items,
        });
        at = at.saturating_add(len);
    }
    if at != page.data.0.saturating_add(page.data.1) {
        return Err(format!(
            "{}: chunk sizes add up to {} bytes, the chunk data holds {}",
            page.what,
            at - page.data.0,
            page.data.1
        ));
    }
    Ok(out)
}

/// Checks the compressed buffers inside one chunk (layout of lance-encoding's mini-block
/// chunk: u16 level count, u16 rep and def sizes when present, the value buffer sizes
/// (u16, or u32 for large chunks), padding to 8; then rep, def and each value buffer, each
/// padded to 8).
fn check_chunk(page: &ChunkedPage, chunk: &Chunk, bytes: &[u8]) -> Result<(), String> {
    let bad = |what: &str| format!("{}: chunk at byte {}: {what}", page.what, chunk.start);
    let pad8 = |x: usize| x.div_ceil(8).saturating_mul(8);
    let u16_at = |at: usize| lancet_proto::le::u16_at(bytes, at).map(usize::from);
    let mut off = 0usize;
    let levels = u16_at(off).ok_or_else(|| bad("truncated header"))?;
    off += 2;
    let sized = |present: bool, off: &mut usize| -> Result<Option<usize>, String> {
        if !present {
            return Ok(None);
        }
        let v = u16_at(*off).ok_or_else(|| bad("truncated header"))?;
        *off += 2;
        Ok(Some(v))
    };
    let rep_size = sized(page.has_rep, &mut off)?;
    let def_size = sized(page.has_def, &mut off)?;
    let width = if page.large { 4 } else { 2 };
    let n = usize::try_from(page.num_buffers).map_err(|_| bad("too many buffers"))?;
    let mut sizes = Vec::with_capacity(n.min(64));
    for _ in 0..n {
        let v = if page.large {
            lancet_proto::le::u32_at(bytes, off).and_then(|v| usize::try_from(v).ok())
        } else {
            u16_at(off)
        };
        sizes.push(v.ok_or_else(|| bad("truncated header"))?);
        off += width;
    }
    off = pad8(off);
    let level_bound = (levels as u64).saturating_mul(2).saturating_add(64);
    for (size, scheme, what) in [
        (rep_size, page.rep, "rep levels"),
        (def_size, page.def, "def levels"),
    ] {
        let Some(size) = size else { continue };
        if let Some(scheme) = scheme {
            let head = bytes
                .get(off..)
                .ok_or_else(|| bad("levels past the chunk"))?;
            let site = Site {
                what: format!("{}: chunk at byte {} {what}", page.what, chunk.start),
                scheme,
                bound: level_bound.min(MAX_DECOMPRESSED),
            };
            check_prefix(&site, head.get(..size.min(head.len())).unwrap_or_default())?;
        }
        off = pad8(off.saturating_add(size));
    }
    if let (Some((scheme, kind)), Some(first)) = (page.value, sizes.first()) {
        let head = bytes
            .get(off..)
            .ok_or_else(|| bad("values past the chunk"))?;
        let n = chunk.items;
        let bound = match kind {
            ValueBound::Bits(b) => ceil8(n.saturating_mul(b)),
            ValueBound::Variable => n
                .saturating_add(1)
                .saturating_mul(8)
                .saturating_add(n.saturating_mul(4096)),
            ValueBound::Unknown => MAX_DECOMPRESSED,
        };
        let site = Site {
            what: format!("{}: chunk at byte {} values", page.what, chunk.start),
            scheme,
            bound: bound.saturating_add(64).min(MAX_DECOMPRESSED),
        };
        check_prefix(
            &site,
            head.get(..(*first).min(head.len())).unwrap_or_default(),
        )?;
    }
    Ok(())
}

/// The declared decompressed size at the start of `head` against the site's bound.
fn check_prefix(site: &Site, head: &[u8]) -> Result<(), String> {
    let declared = match site.scheme {
        ZSTD => {
            let magic = lancet_proto::le::u32_at(head, 0);
            if head.len() < 8 || magic == Some(ZSTD_MAGIC) {
                return Err(format!(
                    "{}: a zstd buffer without its length prefix (its size is unbounded)",
                    site.what
                ));
            }
            lancet_proto::le::u64_at(head, 0).unwrap_or(u64::MAX)
        }
        LZ4 => u64::from(lancet_proto::le::u32_at(head, 0).ok_or_else(|| {
            format!(
                "{}: an LZ4 buffer shorter than its length prefix",
                site.what
            )
        })?),
        other => {
            return Err(format!(
                "{}: unknown buffer compression scheme {other}",
                site.what
            ))
        }
    };
    if declared > site.bound {
        return Err(format!(
            "{}: a compressed buffer declares {declared} decompressed bytes, more than the {} its page allows",
            site.what, site.bound
        ));
    }
    Ok(())
}

/// An [`EncodingsIo`] that checks every range it returns against the file's compressed
/// buffers (see the module docs) before lance-encoding decodes it.
#[derive(Debug)]
pub(crate) struct CheckedIo {
    pub(crate) inner: Arc<dyn EncodingsIo>,
    pub(crate) pages: Arc<CompressedPages>,
    pub(crate) ahead: Arc<ReadAhead>,
}

/// Read-ahead for a read of whole columns: every buffer of the columns' pages is fetched in
/// one request before lance-file decodes them (it would otherwise read metadata and data in
/// turn, a request each), and held for the read.
#[derive(Debug, Default)]
pub(crate) struct ReadAhead {
    held: std::sync::Mutex<Vec<(Range<u64>, Bytes)>>,
}

impl ReadAhead {
    /// Fetches `ranges` through `io` in one request and holds them.
    pub(crate) async fn prefetch(
        &self,
        io: &dyn EncodingsIo,
        ranges: Vec<Range<u64>>,
    ) -> lance_core::Result<()> {
        let ranges: Vec<Range<u64>> = ranges.into_iter().filter(|r| r.start < r.end).collect();
        if ranges.is_empty() {
            return Ok(());
        }
        let got = io.submit_request(ranges.clone(), 0).await?;
        if let Ok(mut held) = self.held.lock() {
            held.extend(ranges.into_iter().zip(got));
        }
        Ok(())
    }

    /// Forgets what it holds.
    pub(crate) fn clear(&self) {
        if let Ok(mut held) = self.held.lock() {
            held.clear();
        }
    }

    /// `range`, when a held read covers it.
    fn take(&self, range: &Range<u64>) -> Option<Bytes> {
        let held = self.held.lock().ok()?;
        held.iter().find_map(|(r, b)| {
            if range.start >= r.start && range.end <= r.end {
                let from = usize::try_from(range.start - r.start).ok()?;
                let to = usize::try_from(range.end - r.start).ok()?;
                b.get(from..to).map(|_| b.slice(from..to))
            } else {
                None
            }
        })
    }
}

impl EncodingsIo for CheckedIo {
    fn submit_request(
        &self,
        ranges: Vec<Range<u64>>,
        priority: u64,
    ) -> BoxFuture<'static, lance_core::Result<Vec<Bytes>>> {
        let pages = self.pages.clone();
        let ahead = self.ahead.clone();
        // what read-ahead already holds is served from memory; the rest is one request
        let served: Vec<Option<Bytes>> = ranges
            .iter()
            .map(|r| if r.start < r.end { ahead.take(r) } else { None })
            .collect();
        let wanted: Vec<Range<u64>> = ranges
            .iter()
            .zip(&served)
            .filter(|(_, s)| s.is_none())
            .map(|(r, _)| r.clone())
            .collect();
        // the chunk tables of chunked pages this read touches that are not known yet (read
        // once per file), fetched in the same request as the pages
        let mut metas: Vec<(u64, Range<u64>)> = Vec::new();
        for page in wanted.iter().flat_map(|r| pages.chunked_in(r)) {
            if pages.table(page.data.0).is_some() || metas.iter().any(|(d, _)| *d == page.data.0) {
                continue;
            }
            let meta = page.meta.0..page.meta.0.saturating_add(page.meta.1);
            if let Some(bytes) = ahead.take(&meta) {
                match chunk_table(page, bytes.as_ref()) {
                    Ok(table) => pages.set_table(page.data.0, Arc::new(table)),
                    Err(e) => {
                        return async move { Err(lance_core::Error::invalid_input(e)) }.boxed()
                    }
                }
                continue;
            }
            metas.push((page.data.0, meta));
        }
        let asked = ranges;
        let mut all: Vec<Range<u64>> = metas.iter().map(|(_, m)| m.clone()).collect();
        all.extend(wanted.iter().cloned());
        let read = (!all.is_empty()).then(|| self.inner.submit_request(all.clone(), priority));
        async move {
            let mut got = match read {
                Some(read) => read.await?,
                None => Vec::new(),
            };
            if got.len() != all.len() {
                return Err(lance_core::Error::io(
                    "a page read returned fewer ranges than asked",
                ));
            }
            let fetched = got.split_off(metas.len());
            for ((data_start, _), bytes) in metas.iter().zip(&got) {
                let Some(page) = wanted
                    .iter()
                    .flat_map(|r| pages.chunked_in(r))
                    .find(|p| p.data.0 == *data_start)
                else {
                    continue;
                };
                let table =
                    chunk_table(page, bytes.as_ref()).map_err(lance_core::Error::invalid_input)?;
                pages.set_table(page.data.0, Arc::new(table));
            }
            let mut fetched = fetched.into_iter();
            let mut data = Vec::with_capacity(asked.len());
            for (range, held) in asked.iter().zip(served) {
                // every range not held was asked for, in order (empty ones included)
                let bytes = match held {
                    Some(b) => b,
                    None => fetched.next().ok_or_else(|| {
                        lance_core::Error::io(format!(
                            "a page read returned no bytes for {range:?}"
                        ))
                    })?,
                };
                data.push(bytes);
            }
            for (range, bytes) in asked.iter().zip(&data) {
                pages
                    .check(range, bytes)
                    .map_err(lance_core::Error::invalid_input)?;
            }
            Ok(data)
        }
        .boxed()
    }
}

/// Serves page reads from an object store (`get_ranges`, which coalesces nearby ranges).
#[derive(Debug)]
pub(crate) struct StoreIo {
    pub(crate) store: Arc<dyn object_store::ObjectStore>,
    pub(crate) path: object_store::path::Path,
}

impl EncodingsIo for StoreIo {
    fn submit_request(
        &self,
        ranges: Vec<Range<u64>>,
        _priority: u64,
    ) -> BoxFuture<'static, lance_core::Result<Vec<Bytes>>> {
        let store = self.store.clone();
        let path = self.path.clone();
        async move {
            let wanted: Vec<Range<u64>> =
                ranges.iter().filter(|r| r.start < r.end).cloned().collect();
            tracing::debug!(
                %path,
                ranges = wanted.len(),
                bytes = wanted.iter().map(|r| r.end - r.start).sum::<u64>(),
                "read pages"
            );
            let mut got = if wanted.is_empty() {
                Vec::new()
            } else {
                store
                    .get_ranges(&path, &wanted)
                    .await
                    .map_err(|e| lance_core::Error::io(format!("reading {path}: {e}")))?
            }
            .into_iter();
            ranges
                .iter()
                .map(|r| {
                    if r.start < r.end {
                        got.next().ok_or_else(|| {
                            lance_core::Error::io(format!("reading {path}: a range went missing"))
                        })
                    } else {
                        Ok(Bytes::new())
                    }
                })
                .collect()
        }
        .boxed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn site(scheme: i32, bound: u64) -> Site {
        Site {
            what: "column 0 page 0 dictionary".into(),
            scheme,
            bound,
        }
    }

    #[test]
    fn prefixes_are_checked_against_the_bound() {
        let zstd = |n: u64| {
            let mut b = n.to_le_bytes().to_vec();
            b.extend_from_slice(&[0x28, 0xb5, 0x2f, 0xfd, 0, 0]);
            b
        };
        assert!(check_prefix(&site(ZSTD, 100), &zstd(100)).is_ok());
        let e = check_prefix(&site(ZSTD, 100), &zstd(35_622_458_753_191)).unwrap_err();
        assert!(e.contains("declares 35622458753191"), "{e}");
        // a frame without the prefix would be decoded without bound
        let raw = [0x28, 0xb5, 0x2f, 0xfd, 0, 0, 0, 0, 0];
        assert!(check_prefix(&site(ZSTD, 100), &raw)
            .unwrap_err()
            .contains("without its length prefix"));
        assert!(check_prefix(&site(ZSTD, 100), &[1, 2, 3]).is_err());
        assert!(check_prefix(&site(LZ4, 64), &64u32.to_le_bytes()).is_ok());
        assert!(check_prefix(&site(LZ4, 64), &65u32.to_le_bytes()).is_err());
        assert!(check_prefix(&site(LZ4, 64), &[1, 2]).is_err());
        assert!(check_prefix(&site(7, 64), &[0; 8])
            .unwrap_err()
            .contains("unknown"));
    }

    fn chunked(num_items: u64) -> ChunkedPage {
        ChunkedPage {
            what: "column 0 page 0".into(),
            meta: (0, 4),
            data: (100, 48),
            large: false,
            num_buffers: 1,
            has_rep: false,
            has_def: false,
            num_items,
            value: Some((ZSTD, ValueBound::Bits(64))),
            rep: None,
            def: None,
        }
    }

    /// A chunk: u16 level count, u16 size of its one value buffer, padding to 8, then the
    /// buffer (a zstd prefix declaring `declared` bytes, then the frame), padded to `len`.
    fn chunk(declared: u64, len: usize) -> Vec<u8> {
        let mut b = vec![0, 0, 16, 0, 0, 0, 0, 0];
        b.extend_from_slice(&declared.to_le_bytes());
        b.extend_from_slice(&[0x28, 0xb5, 0x2f, 0xfd, 0, 0, 0, 0]);
        b.resize(len, 0);
        b
    }

    #[test]
    fn chunk_tables_must_tile_the_chunk_data() {
        let page = chunked(10);
        // two chunks of 24 bytes: 8 values (log 3), then the last 2
        let words: Vec<u8> = [(2u16 << 4) | 3, 2 << 4]
            .iter()
            .flat_map(|w| w.to_le_bytes())
            .collect();
        let table = chunk_table(&page, &words).unwrap();
        assert_eq!(
            table
                .iter()
                .map(|c| (c.start, c.len, c.items))
                .collect::<Vec<_>>(),
            vec![(100, 24, 8), (124, 24, 2)]
        );
        // sizes that do not add up to the chunk data, a non-final chunk of no values, more
        // values than the page holds, a torn word
        for (words, rule) in [
            (vec![2u16 << 4], "add up"),
            (vec![2 << 4, 2 << 4], "holds no values"),
            (vec![(2 << 4) | 4, 2 << 4], "more values"),
        ] {
            let bytes: Vec<u8> = words.iter().flat_map(|w: &u16| w.to_le_bytes()).collect();
            let e = chunk_table(&page, &bytes).unwrap_err();
            assert!(e.contains(rule), "{e}");
        }
        assert!(chunk_table(&page, &[0, 0, 0])
            .unwrap_err()
            .contains("whole words"));
    }

    #[test]
    fn each_chunk_value_prefix_is_bounded_by_its_value_count() {
        let mut pages = CompressedPages::default();
        let page = chunked(10);
        pages.chunked.insert(page.data.0, page.clone());
        let words: Vec<u8> = [(2u16 << 4) | 3, 2 << 4]
            .iter()
            .flat_map(|w| w.to_le_bytes())
            .collect();
        // a data read before the chunk table is known is refused
        let data = Bytes::from([chunk(64, 24), chunk(16, 24)].concat());
        assert!(pages
            .check(&(100..148), &data)
            .unwrap_err()
            .contains("chunk table"));
        pages.set_table(100, Arc::new(chunk_table(&page, &words).unwrap()));
        // 8 and 2 int64 values: 64 and 16 bytes (plus 64 of slack) are within bounds
        assert!(pages.check(&(100..148), &data).is_ok());
        let e = pages
            .check(
                &(100..148),
                &Bytes::from([chunk(64, 24), chunk(1 << 40, 24)].concat()),
            )
            .unwrap_err();
        assert!(
            e.contains("chunk at byte 124 values") && e.contains("declares"),
            "{e}"
        );
        // a read of part of a chunk could hide its prefix from the check
        assert!(pages
            .check(&(104..148), &data.slice(4..))
            .unwrap_err()
            .contains("part of a chunk"));
    }

    #[test]
    fn ranges_are_checked_where_they_hold_a_prefix_or_touch_a_refused_page() {
        let mut pages = CompressedPages::default();
        pages.sites.insert(100, site(LZ4, 64));
        pages.refuse(
            "column 1 page 3",
            &[(1000, 50)],
            "compressed mini-block chunks",
        );
        let ok = Bytes::from(64u32.to_le_bytes().to_vec());
        let big = Bytes::from(65u32.to_le_bytes().to_vec());
        assert!(pages.check(&(100..104), &ok).is_ok());
        assert!(pages.check(&(100..104), &big).is_err());
        // the prefix in the middle of a larger range
        let mut padded = vec![0u8; 10];
        padded.extend_from_slice(&65u32.to_le_bytes());
        assert!(pages.check(&(90..104), &Bytes::from(padded)).is_err());
        // ranges that hold no prefix and touch no refused page pass untouched
        assert!(pages
            .check(&(0..100), &Bytes::from(vec![0xff; 100]))
            .is_ok());
        assert!(pages.check(&(104..1000), &Bytes::new()).is_ok());
        let e = pages.check(&(1040..1060), &Bytes::new()).unwrap_err();
        assert!(e.contains("column 1 page 3"), "{e}");
    }
}
