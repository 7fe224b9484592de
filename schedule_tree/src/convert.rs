//! Conversion between isl schedules and [`ScheduleTree`].
//!
//! isl → typed walks isl's schedule nodes and keeps every isl object as isl's text.
//! typed → isl writes isl's YAML block form (every set/map text in double quotes, as isl's
//! own printer does) and hands it to isl's reader, so every property the YAML form can
//! express survives the round trip.

use crate::mark::Mark;
use crate::messages::{strip_isl_kind, unknown_mark_help};
use crate::tree::{Band, Node, NodeKind, ScheduleTree};
use isl_rs::{Schedule, ScheduleNode, ScheduleNodeType};
use polyhedral::isl::ffi::{self, model, schedule_tree as st_ffi};
use polyhedral::isl::{Ctx, IslResultExt};

/// Copies an isl string out (and frees it), or says what could not be printed.
fn owned(p: *mut std::os::raw::c_char, what: &str) -> miette::Result<String> {
    // SAFETY: every caller passes the fresh result of an isl `*_to_str` function.
    unsafe { ffi::take_isl_string(p) }
        .ok_or_else(|| miette::miette!("isl could not print the {what} of a schedule node"))
}

fn union_set_text(u: &isl_rs::UnionSet, what: &str) -> miette::Result<String> {
    // SAFETY: `u` is borrowed for the call only.
    owned(unsafe { model::isl_union_set_to_str(u.ptr) }, what)
}
fn set_text(s: &isl_rs::Set, what: &str) -> miette::Result<String> {
    // SAFETY: as above.
    owned(unsafe { model::isl_set_to_str(s.ptr) }, what)
}
fn union_map_text(u: &isl_rs::UnionMap, what: &str) -> miette::Result<String> {
    // SAFETY: as above.
    owned(unsafe { model::isl_union_map_to_str(u.ptr) }, what)
}

fn isl_node_type_name(t: &ScheduleNodeType) -> &'static str {
    match t {
        ScheduleNodeType::Error => "error",
        ScheduleNodeType::Band => "band",
        ScheduleNodeType::Context => "context",
        ScheduleNodeType::Domain => "domain",
        ScheduleNodeType::Expansion => "expansion",
        ScheduleNodeType::Extension => "extension",
        ScheduleNodeType::Filter => "filter",
        ScheduleNodeType::Leaf => "leaf",
        ScheduleNodeType::Guard => "guard",
        ScheduleNodeType::Mark => "mark",
        ScheduleNodeType::Sequence => "sequence",
        ScheduleNodeType::Set => "set",
    }
}

fn band_from_isl(node: &ScheduleNode) -> miette::Result<Band> {
    let mupa = node
        .band_get_partial_schedule()
        .isl("reading a band's partial schedule")?;
    let schedule = st_ffi::multi_union_pw_aff_text(&mupa)
        .ok_or_else(|| miette::miette!("isl could not print a band's partial schedule"))?;
    let permutable = node
        .band_get_permutable()
        .isl("reading whether a band is permutable")?;
    let n = node.band_n_member().isl("counting a band's members")?;
    let coincident = (0..n)
        .map(|i| {
            node.band_member_get_coincident(i)
                .isl("reading whether a band member is coincident")
        })
        .collect::<miette::Result<Vec<bool>>>()?;
    let options = node
        .band_get_ast_build_options()
        .isl("reading a band's AST build options")?;
    let empty = options
        .is_empty()
        .isl("checking a band's AST build options")?;
    let ast_options = if empty {
        None
    } else {
        Some(union_set_text(&options, "AST build options")?)
    };
    Ok(Band {
        schedule,
        permutable,
        coincident,
        ast_options,
    })
}

fn kind_from_isl(node: &ScheduleNode) -> miette::Result<NodeKind> {
    let t = node.get_type().isl("reading a schedule node's type")?;
    Ok(match t {
        ScheduleNodeType::Domain => NodeKind::Domain {
            domain: union_set_text(
                &node.domain_get_domain().isl("reading a domain node")?,
                "domain",
            )?,
        },
        ScheduleNodeType::Band => NodeKind::Band(band_from_isl(node)?),
        ScheduleNodeType::Sequence => NodeKind::Sequence,
        ScheduleNodeType::Set => NodeKind::Set,
        ScheduleNodeType::Filter => NodeKind::Filter {
            filter: union_set_text(
                &node.filter_get_filter().isl("reading a filter node")?,
                "filter",
            )?,
        },
        ScheduleNodeType::Mark => {
            let id = node.mark_get_id().isl("reading a mark node")?;
            let name = id.get_name().isl("reading a mark's name")?.to_string();
            match Mark::from_isl_name(&name) {
                Some(m) => NodeKind::Mark(m),
                None => {
                    return Err(miette::miette!(
                        help = unknown_mark_help(),
                        "the schedule tree has a mark `{name}` that polyc does not know"
                    ))
                }
            }
        }
        ScheduleNodeType::Extension => NodeKind::Extension {
            extension: union_map_text(
                &node
                    .extension_get_extension()
                    .isl("reading an extension node")?,
                "extension",
            )?,
        },
        ScheduleNodeType::Context => NodeKind::Context {
            context: set_text(
                &node.context_get_context().isl("reading a context node")?,
                "context",
            )?,
        },
        ScheduleNodeType::Guard => NodeKind::Guard {
            guard: set_text(
                &node.guard_get_guard().isl("reading a guard node")?,
                "guard",
            )?,
        },
        ScheduleNodeType::Expansion => {
            let c = node
                .expansion_get_contraction()
                .isl("reading an expansion node's contraction")?;
            let e = node
                .expansion_get_expansion()
                .isl("reading an expansion node's expansion")?;
            NodeKind::Expansion {
                contraction: st_ffi::union_pw_multi_aff_text(&c).ok_or_else(|| {
                    miette::miette!("isl could not print the contraction of an expansion node")
                })?,
                expansion: union_map_text(&e, "expansion")?,
            }
        }
        ScheduleNodeType::Leaf => NodeKind::Leaf,
        ScheduleNodeType::Error => {
            return Err(miette::miette!(
                help = "this is an internal error in polyc's use of isl; please report it",
                "isl returned a schedule node of type `{}`",
                isl_node_type_name(&t)
            ))
        }
    })
}

fn node_from_isl(node: &ScheduleNode) -> miette::Result<Node> {
    let kind = kind_from_isl(node)?;
    let n = node
        .n_children()
        .isl("counting a schedule node's children")?;
    let mut children = Vec::with_capacity(n.max(0) as usize);
    for i in 0..n {
        let c = node.get_child(i).isl("visiting a schedule node's child")?;
        children.push(node_from_isl(&c)?);
    }
    Ok(Node { kind, children })
}

/// Where a string in a node would break the YAML we hand to isl.
fn yaml_string(text: &str, key: &str, path: &[usize]) -> miette::Result<String> {
    if let Some(c) = text.chars().find(|c| *c == '"' || *c == '\0') {
        return Err(miette::miette!(
            help = "isl texts never contain double quotes or NUL characters; build the text with isl's printer",
            "the `{key}` text of the schedule-tree node at path {path:?} contains {}",
            if c == '"' { "a double quote" } else { "a NUL character" }
        ));
    }
    // isl's strings are single-line; a line break is only white space in isl's syntax.
    let one_line: String = text
        .chars()
        .map(|c| if c == '\n' || c == '\r' { ' ' } else { c })
        .collect();
    Ok(format!("\"{one_line}\""))
}

/// Writes `node` as isl YAML block mapping: keys at column `col`; the first key is preceded
/// by `first` (either `col` spaces or `col - 2` spaces and a dash).
fn emit(
    node: &Node,
    path: &mut Vec<usize>,
    col: usize,
    first: String,
    out: &mut String,
) -> miette::Result<()> {
    let pad = " ".repeat(col);
    let mut lines: Vec<String> = Vec::new();
    match &node.kind {
        NodeKind::Domain { domain } => {
            lines.push(format!("domain: {}", yaml_string(domain, "domain", path)?))
        }
        NodeKind::Filter { filter } => {
            lines.push(format!("filter: {}", yaml_string(filter, "filter", path)?))
        }
        NodeKind::Context { context } => lines.push(format!(
            "context: {}",
            yaml_string(context, "context", path)?
        )),
        NodeKind::Guard { guard } => {
            lines.push(format!("guard: {}", yaml_string(guard, "guard", path)?))
        }
        NodeKind::Extension { extension } => lines.push(format!(
            "extension: {}",
            yaml_string(extension, "extension", path)?
        )),
        NodeKind::Expansion {
            contraction,
            expansion,
        } => {
            lines.push(format!(
                "contraction: {}",
                yaml_string(contraction, "contraction", path)?
            ));
            lines.push(format!(
                "expansion: {}",
                yaml_string(expansion, "expansion", path)?
            ));
        }
        NodeKind::Mark(m) => lines.push(format!("mark: \"{}\"", m.to_isl_name())),
        NodeKind::Band(b) => {
            lines.push(format!(
                "schedule: {}",
                yaml_string(&b.schedule, "schedule", path)?
            ));
            if b.permutable {
                lines.push("permutable: 1".into());
            }
            if b.coincident.iter().any(|c| *c) {
                let v: Vec<&str> = b
                    .coincident
                    .iter()
                    .map(|c| if *c { "1" } else { "0" })
                    .collect();
                lines.push(format!("coincident: [ {} ]", v.join(", ")));
            }
            if let Some(o) = &b.ast_options {
                lines.push(format!("options: {}", yaml_string(o, "options", path)?));
            }
        }
        NodeKind::Sequence | NodeKind::Set => {
            let key = if matches!(node.kind, NodeKind::Sequence) {
                "sequence"
            } else {
                "set"
            };
            out.push_str(&first);
            out.push_str(key);
            out.push_str(":\n");
            for (i, c) in node.children.iter().enumerate() {
                path.push(i);
                emit(c, path, col + 2, format!("{pad}- "), out)?;
                path.pop();
            }
            return Ok(());
        }
        NodeKind::Leaf => {
            return Err(miette::miette!(
                help =
                    "a leaf can only end a branch: put it as the only child of a non-sequence node",
                "the schedule-tree node at path {path:?} is a Leaf where isl needs a real node"
            ))
        }
    }
    for (i, l) in lines.iter().enumerate() {
        out.push_str(if i == 0 { &first } else { &pad });
        out.push_str(l);
        out.push('\n');
    }
    if let Some(c) = node.children.first() {
        if c.is_leaf() && matches!(node.kind, NodeKind::Mark(_)) {
            // isl's reader needs a child below a mark; `leaf` alone is its leaf node.
            out.push_str(&format!("{pad}child:\n{pad}  leaf\n"));
        } else if !c.is_leaf() {
            out.push_str(&pad);
            out.push_str("child:\n");
            path.push(0);
            emit(c, path, col + 2, " ".repeat(col + 2), out)?;
            path.pop();
        }
    }
    Ok(())
}

impl ScheduleTree {
    /// Converts an isl schedule into the typed tree (isl's implicit leaves become
    /// [`NodeKind::Leaf`] children).
    ///
    /// Fails on a mark whose name polyc does not know (the error lists the known ones).
    pub fn from_isl(schedule: &Schedule) -> miette::Result<ScheduleTree> {
        let root = schedule.get_root().isl("reading the root of a schedule")?;
        Ok(ScheduleTree {
            root: node_from_isl(&root)?,
        })
    }

    /// The tree as isl's YAML block form, written without isl (the text
    /// [`ScheduleTree::to_isl`] hands to isl's reader). For isl's own printing of the
    /// result, use [`ScheduleTree::to_isl_yaml`].
    pub fn to_yaml_input(&self) -> miette::Result<String> {
        if !matches!(
            self.root.kind,
            NodeKind::Domain { .. } | NodeKind::Extension { .. }
        ) {
            return Err(miette::miette!(
                help = "isl schedules start at a domain node (or an extension node for a subtree)",
                "the root of the schedule tree is a {} node",
                self.root.kind.name()
            ));
        }
        if let Err(e) = self.root.check_shape() {
            return Err(miette::miette!(
                help = "sequence and set nodes have filter children; leaves have none; every other node has exactly one",
                "the schedule tree is malformed: {e}"
            ));
        }
        let mut out = String::new();
        emit(&self.root, &mut Vec::new(), 0, String::new(), &mut out)?;
        Ok(out)
    }

    /// Converts the typed tree back into an isl schedule. For a tree from
    /// [`ScheduleTree::from_isl`] this is lossless: the result prints exactly as the
    /// original.
    pub fn to_isl(&self, ctx: &Ctx) -> miette::Result<Schedule> {
        let yaml = self.to_yaml_input()?;
        match Schedule::read_from_str(&ctx.isl, &yaml) {
            Ok(s) => Ok(s),
            Err(e) => {
                // Find the offending text so the message can name the node.
                let detail = crate::load::check_tree_texts(ctx, &self.root)
                    .err()
                    .unwrap_or_else(|| strip_isl_kind(&e.to_string()));
                Err(miette::miette!(
                    help = "the typed tree holds isl texts; make sure each is valid isl syntax of the right kind",
                    "isl could not build a schedule from the typed tree: {detail}"
                ))
            }
        }
    }

    /// isl's own YAML block form of the tree (what isl prints for the schedule), with an
    /// explicit `leaf` under a mark that ends its branch ([`leaf_under_marks`]).
    pub fn to_isl_yaml(&self, ctx: &Ctx) -> miette::Result<String> {
        let s = self.to_isl(ctx)?;
        ffi::schedule_to_block_yaml(&s)
            .map(|y| leaf_under_marks(&y))
            .ok_or_else(|| miette::miette!("isl could not print the schedule as YAML"))
    }
}

/// isl prints a mark whose child is a leaf without a `child:` key, but reads a mark only
/// with one: adds `child:` and `leaf` under such marks, so that the printed tree reads
/// back (with `--load-tree`, or by isl).
pub fn leaf_under_marks(yaml: &str) -> String {
    let lines: Vec<&str> = yaml.lines().collect();
    let indent = |l: &str| l.len() - l.trim_start().len();
    let mut out = String::with_capacity(yaml.len());
    for (n, line) in lines.iter().enumerate() {
        out.push_str(line);
        out.push('\n');
        let body = line.trim_start();
        let body = body.strip_prefix("- ").unwrap_or(body);
        if !body.starts_with("mark:") {
            continue;
        }
        // The column of the mark's keys (after a list item's `- `).
        let col = line.len() - body.len();
        let has_child = lines[n + 1..]
            .iter()
            .take_while(|l| indent(l) >= col)
            .any(|l| indent(l) == col && l.trim_start().starts_with("child:"));
        if !has_child {
            let pad = " ".repeat(col);
            out.push_str(&format!("{pad}child:\n{pad}  leaf\n"));
        }
    }
    out
}
