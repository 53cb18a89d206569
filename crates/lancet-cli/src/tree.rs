//! `lancet tree show`: the shape of a version's fragment tree.

use clap::Subcommand;

use crate::at::At;
use std::io::Write;

use lancet::tree::RootInfo;
use lancet::Dataset;
use serde::Serialize;

use crate::error::CliError;

#[derive(Serialize)]
struct Show {
    version: u64,
    root: String,
    root_path: Option<String>,
    height: u32,
    interiors: u64,
    leaves: u64,
    mutations_since_root: u64,
    root_buffer: u64,
    /// Buffered mutations per interior level, the root's children first.
    interior_buffers: Vec<u64>,
    bytes: Bytes,
    watermarks: Watermarks,
    next_action_sequence: u64,
    root_next_action_sequence: u64,
    fragments: u64,
    total_rows: u64,
    visible_rows: u64,
    foreign_objects: u64,
}

#[derive(Serialize)]
struct Bytes {
    root: u64,
    interiors: u64,
    leaves: u64,
}

#[derive(Serialize)]
struct Watermarks {
    zero: u64,
    min: Option<u64>,
    max: Option<u64>,
}

pub async fn show(uri: &str, version: Option<u64>, json: bool) -> Result<(), CliError> {
    let store = lancet::paths::DatasetStore::open(uri)?;
    let ds = Dataset::open_with(store, version, lancet::Caches::new(Default::default())).await?;
    let Some(reader) = ds.storage().tree() else {
        return Err(CliError::Usage(format!(
            "version {} of {uri} keeps its fragments in the flat manifest list, not a tree",
            ds.version()
        )));
    };
    let s = reader.verify().await.map_err(lancet::Error::from)?;
    let (root, root_path) = match &s.root {
        Some(RootInfo::External { path, .. }) => ("external".to_string(), Some(path.clone())),
        _ => ("inline".to_string(), None),
    };
    let show = Show {
        version: ds.version(),
        root,
        root_path,
        height: s.height,
        interiors: s.interiors,
        leaves: s.leaves,
        mutations_since_root: s.mutations_since_root,
        root_buffer: s.root_buffer,
        interior_buffers: s.interior_buffers.clone(),
        bytes: Bytes {
            root: s.root_bytes,
            interiors: s.interior_bytes,
            leaves: s.leaf_bytes,
        },
        watermarks: Watermarks {
            zero: s.zero_watermarks,
            min: s.min_watermark,
            max: s.max_watermark,
        },
        next_action_sequence: s.next_action_sequence,
        root_next_action_sequence: s.root_next_action_sequence,
        fragments: s.totals.fragments,
        total_rows: s.totals.total_rows,
        visible_rows: s.totals.visible_rows,
        foreign_objects: s.foreign_objects,
    };
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    if json {
        serde_json::to_writer(&mut out, &show).map_err(std::io::Error::other)?;
        writeln!(out)?;
        return Ok(());
    }
    show.print(&mut out)
}

impl Show {
    /// The tree's summary as text, a line per aspect.
    fn print(&self, out: &mut impl Write) -> Result<(), CliError> {
        writeln!(out, "version          {}", self.version)?;
        writeln!(
            out,
            "root             {}{}",
            self.root,
            self.root_path.as_ref().map_or(String::new(), |p| format!(
                " ({p}, {} bytes)",
                self.bytes.root
            ))
        )?;
        writeln!(out, "height           {}", self.height)?;
        writeln!(
            out,
            "objects          {} interiors ({} bytes), {} leaves ({} bytes), {} in other datasets",
            self.interiors,
            self.bytes.interiors,
            self.leaves,
            self.bytes.leaves,
            self.foreign_objects
        )?;
        writeln!(
            out,
            "buffers          {} since root, {} in the root, per interior level {:?}",
            self.mutations_since_root, self.root_buffer, self.interior_buffers
        )?;
        writeln!(
            out,
            "watermarks       {} at 0, min {}, max {}",
            self.watermarks.zero,
            self.watermarks.min.map_or("-".into(), |v| v.to_string()),
            self.watermarks.max.map_or("-".into(), |v| v.to_string())
        )?;
        writeln!(
            out,
            "sequences        next {} (root {})",
            self.next_action_sequence, self.root_next_action_sequence
        )?;
        writeln!(
            out,
            "fragments        {} ({} rows, {} visible)",
            self.fragments, self.total_rows, self.visible_rows
        )?;
        Ok(())
    }
}

/// `lancet tree convert`: the latest version's fragments into a tree, as version N+1.
pub async fn convert(uri: &str, leaf_records: usize, inline_root: bool) -> Result<(), CliError> {
    if leaf_records == 0 {
        return Err(CliError::Usage("--leaf-records must be at least 1".into()));
    }
    let ds = Dataset::open(uri).await?;
    let mut config = lancet::tree::TreeWriterConfig {
        leaf_max_records: leaf_records,
        ..Default::default()
    };
    if inline_root {
        config.inline_root_max_bytes = usize::MAX;
    }
    let large = ds.storage().manifest().fragments.len() >= 100_000;
    let next = ds
        .storage()
        .convert_to_tree(&config, |done, total| {
            if large {
                eprint!("\rconverting: {done}/{total} fragments");
                if done == total {
                    eprintln!();
                }
            }
        })
        .await?
        .dataset;
    let reader = next
        .storage()
        .tree()
        .ok_or_else(|| CliError::Usage("no tree was written".into()))?;
    println!(
        "version {} keeps {} fragments in a tree of height {} ({} root)",
        next.version(),
        reader.totals().fragments,
        reader.height(),
        match reader.root_info() {
            RootInfo::Inline => "inline",
            RootInfo::External { .. } => "external",
        }
    );
    Ok(())
}

/// `lancet tree flatten`: the latest version's tree as a flat manifest, version N+1.
pub async fn flatten(uri: &str) -> Result<(), CliError> {
    let ds = Dataset::open(uri).await?;
    let next = ds.storage().flatten().await?.dataset;
    println!(
        "version {} lists {} fragments in a flat manifest",
        next.version(),
        next.storage().manifest().fragments.len()
    );
    Ok(())
}

#[derive(Subcommand)]
pub enum TreeCommand {
    /// Publish version N+1 of a flat table with its fragments in a fragment tree (Lance 14
    /// refuses that version; N stays readable).
    Convert {
        dataset: String,
        /// Records per leaf (default: the tree writer's, 2048).
        #[arg(long)]
        leaf_records: Option<usize>,
        /// Keep the root in the manifest, however large.
        #[arg(long)]
        inline_root: bool,
    },
    /// Publish version N+1 of a tree table as a flat manifest (what Lance 14 reads).
    Flatten { dataset: String },
    /// Height, objects, buffers, watermarks and bytes per object kind (walks and checks the
    /// whole tree).
    Show {
        dataset: String,
        #[command(flatten)]
        at: At,
        #[arg(long)]
        json: bool,
    },
}

/// `lancet tree ...`.
pub async fn run(command: TreeCommand) -> Result<(), CliError> {
    match command {
        TreeCommand::Show { dataset, at, json } => match at.resolve(&dataset).await {
            Ok((dataset, version)) => show(&dataset, version, json).await,
            Err(e) => Err(e),
        },
        TreeCommand::Convert {
            dataset,
            leaf_records,
            inline_root,
        } => {
            let leaf_records =
                leaf_records.unwrap_or(lancet::tree::TreeWriterConfig::default().leaf_max_records);
            convert(&dataset, leaf_records, inline_root).await
        }
        TreeCommand::Flatten { dataset } => flatten(&dataset).await,
    }
}
