//! The typed schedule tree: node kinds, nodes, the tree, and the [`Pass`] trait.
//!
//! Every isl object a node carries is kept as isl's own text (what isl prints), so the
//! tree is plain data: it can be cloned, compared, printed and edited without an isl
//! context. [`ScheduleTree::to_isl`](crate::ScheduleTree::to_isl) turns it back into an
//! isl schedule.

use crate::mark::Mark;

/// A band node: a partial schedule with some properties per member (dimension).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Band {
    /// The partial schedule, isl `multi_union_pw_aff` text, e.g.
    /// `[H] -> [{ S_0[h, w] -> [(h)] }, { S_0[h, w] -> [(w)] }]`.
    pub schedule: String,
    /// Whether the members may be permuted (the band is tilable).
    pub permutable: bool,
    /// One entry per member: may the iterations of this member run in parallel.
    pub coincident: Vec<bool>,
    /// isl's AST build options (`isl_union_set` text), if any.
    ///
    /// This is everything else isl's band carries: isl folds the per-member AST loop types
    /// (`atomic[0]`, `unroll[1]`, `separate[2]`, …), the isolate option
    /// (`isolate[[...] -> [...]]`) and the loop types of the isolated part
    /// (`[isolate[] -> atomic[0]]`) into this one set, and splits them out again when the
    /// set is given back, so keeping the text keeps the band lossless.
    pub ast_options: Option<String>,
}

impl Band {
    /// A band with `schedule`, not permutable, no member coincident, no options.
    /// `members` is the number of members of `schedule`.
    pub fn new(schedule: impl Into<String>, members: usize) -> Band {
        Band {
            schedule: schedule.into(),
            permutable: false,
            coincident: vec![false; members],
            ast_options: None,
        }
    }
    /// The number of members (the length of [`Band::coincident`]).
    pub fn n_members(&self) -> usize {
        self.coincident.len()
    }
}

/// What a schedule-tree node is, with the isl data it carries (as isl text).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NodeKind {
    /// The root: the statement instances to schedule (`isl_union_set` text).
    Domain {
        /// isl union set text.
        domain: String,
    },
    /// A band: a partial schedule.
    Band(Band),
    /// The children (filters) run one after the other, in order.
    Sequence,
    /// The children (filters) run in any order.
    Set,
    /// Only the statement instances in `filter` reach the subtree.
    Filter {
        /// isl union set text.
        filter: String,
    },
    /// A typed mark.
    Mark(Mark),
    /// Adds statement instances (copies, fused producers) to the subtree
    /// (`isl_union_map` text, from the outer schedule to the instances).
    Extension {
        /// isl union map text.
        extension: String,
    },
    /// Constraints on the parameters and outer schedule dimensions the subtree may assume
    /// (`isl_set` text).
    Context {
        /// isl set text.
        context: String,
    },
    /// Constraints the generated code must check before running the subtree (`isl_set`
    /// text).
    Guard {
        /// isl set text.
        guard: String,
    },
    /// Replaces the domain of the subtree by a contracted one.
    Expansion {
        /// isl `union_pw_multi_aff` text: from the expanded to the contracted domain.
        contraction: String,
        /// isl `union_map` text: from the contracted to the expanded domain.
        expansion: String,
    },
    /// The end of a branch.
    Leaf,
}

impl NodeKind {
    /// The node type's name as the dumps show it: `Domain`, `Band`, `Mark`, …
    pub fn name(&self) -> &'static str {
        match self {
            NodeKind::Domain { .. } => "Domain",
            NodeKind::Band(_) => "Band",
            NodeKind::Sequence => "Sequence",
            NodeKind::Set => "Set",
            NodeKind::Filter { .. } => "Filter",
            NodeKind::Mark(_) => "Mark",
            NodeKind::Extension { .. } => "Extension",
            NodeKind::Context { .. } => "Context",
            NodeKind::Guard { .. } => "Guard",
            NodeKind::Expansion { .. } => "Expansion",
            NodeKind::Leaf => "Leaf",
        }
    }
}

/// One node of a schedule tree and its children.
///
/// Shape: a [`NodeKind::Sequence`] or [`NodeKind::Set`] has one or more children, each a
/// [`NodeKind::Filter`]; a [`NodeKind::Leaf`] has none; every other node has exactly one
/// child (a `Leaf` when nothing follows).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Node {
    /// What the node is.
    pub kind: NodeKind,
    /// Its children, in order.
    pub children: Vec<Node>,
}

impl Node {
    /// A node with the given children.
    pub fn new(kind: NodeKind, children: Vec<Node>) -> Node {
        Node { kind, children }
    }
    /// A leaf.
    pub fn leaf() -> Node {
        Node::new(NodeKind::Leaf, Vec::new())
    }
    /// A node with exactly one child.
    pub fn with_child(kind: NodeKind, child: Node) -> Node {
        Node::new(kind, vec![child])
    }
    /// Whether this is a leaf.
    pub fn is_leaf(&self) -> bool {
        matches!(self.kind, NodeKind::Leaf)
    }
    /// The number of nodes in this subtree, leaves included.
    pub fn count(&self) -> usize {
        1 + self.children.iter().map(Node::count).sum::<usize>()
    }
    /// Calls `f(path, node)` on every node of this subtree in pre-order. `path` lists the
    /// child positions from this node down to `node` (empty for this node).
    pub fn visit<'a>(&'a self, f: &mut dyn FnMut(&[usize], &'a Node)) {
        let mut path = Vec::new();
        self.visit_at(&mut path, f);
    }
    fn visit_at<'a>(&'a self, path: &mut Vec<usize>, f: &mut dyn FnMut(&[usize], &'a Node)) {
        f(path, self);
        for (i, c) in self.children.iter().enumerate() {
            path.push(i);
            c.visit_at(path, f);
            path.pop();
        }
    }
    /// Every node of this subtree in pre-order.
    pub fn preorder(&self) -> Vec<&Node> {
        let mut v = Vec::new();
        self.visit(&mut |_, n| v.push(n));
        v
    }
    /// The descendant at `path` (child positions), `None` if there is none.
    pub fn at(&self, path: &[usize]) -> Option<&Node> {
        match path.split_first() {
            None => Some(self),
            Some((i, rest)) => self.children.get(*i)?.at(rest),
        }
    }
    /// The descendant at `path`, mutably.
    pub fn at_mut(&mut self, path: &[usize]) -> Option<&mut Node> {
        match path.split_first() {
            None => Some(self),
            Some((i, rest)) => self.children.get_mut(*i)?.at_mut(rest),
        }
    }
    /// Checks the shape rules of [`Node`]; on failure, says where (as a path) and what.
    pub fn check_shape(&self) -> Result<(), String> {
        let mut err = None;
        self.visit(&mut |path, n| {
            if err.is_some() {
                return;
            }
            let bad = match &n.kind {
                NodeKind::Leaf if !n.children.is_empty() => Some("a Leaf has children".into()),
                NodeKind::Leaf => None,
                NodeKind::Sequence | NodeKind::Set => {
                    if n.children.is_empty() {
                        Some(format!("a {} has no children", n.kind.name()))
                    } else {
                        n.children
                            .iter()
                            .find(|c| !matches!(c.kind, NodeKind::Filter { .. }))
                            .map(|c| {
                                format!(
                                    "a child of a {} is a {}, not a Filter",
                                    n.kind.name(),
                                    c.kind.name()
                                )
                            })
                    }
                }
                k if n.children.len() != 1 => Some(format!(
                    "a {} has {} children (it must have exactly one; use a Leaf to end a branch)",
                    k.name(),
                    n.children.len()
                )),
                _ => None,
            };
            if let Some(b) = bad {
                err = Some(format!("node at path {path:?}: {b}"));
            }
        });
        err.map_or(Ok(()), Err)
    }
}

/// A whole schedule tree. The root is a [`NodeKind::Domain`] (isl also allows an
/// [`NodeKind::Extension`] root for subtrees).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScheduleTree {
    /// The root node.
    pub root: Node,
}

impl ScheduleTree {
    /// Wraps a root node.
    pub fn new(root: Node) -> ScheduleTree {
        ScheduleTree { root }
    }
    /// The number of nodes, leaves included.
    pub fn node_count(&self) -> usize {
        self.root.count()
    }
    /// Calls `f(path, node)` on every node in pre-order (see [`Node::visit`]).
    pub fn visit<'a>(&'a self, f: &mut dyn FnMut(&[usize], &'a Node)) {
        self.root.visit(f)
    }
    /// Every node in pre-order.
    pub fn nodes(&self) -> Vec<&Node> {
        self.root.preorder()
    }
    /// The node at `path` (child positions from the root).
    pub fn node_at(&self, path: &[usize]) -> Option<&Node> {
        self.root.at(path)
    }
    /// The node at `path`, mutably.
    pub fn node_at_mut(&mut self, path: &[usize]) -> Option<&mut Node> {
        self.root.at_mut(path)
    }
    /// The domain text of the root, if the root is a Domain node.
    pub fn domain(&self) -> Option<&str> {
        match &self.root.kind {
            NodeKind::Domain { domain } => Some(domain),
            _ => None,
        }
    }
    /// The statement names of the root domain, each once, in natural order (`S_2` before
    /// `S_10`). Empty when the root is not a Domain node.
    pub fn statements(&self) -> Vec<String> {
        let mut v = self
            .domain()
            .map(crate::isl_text::tuple_names)
            .unwrap_or_default();
        v.sort_by_cached_key(|n| crate::isl_text::natural_key(n));
        v
    }
    /// The paths of every node whose kind satisfies `pred`, in pre-order.
    pub fn find(&self, pred: &dyn Fn(&NodeKind) -> bool) -> Vec<Vec<usize>> {
        let mut v = Vec::new();
        self.visit(&mut |p, n| {
            if pred(&n.kind) {
                v.push(p.to_vec());
            }
        });
        v
    }
    /// The paths of every band node, in pre-order.
    pub fn bands(&self) -> Vec<Vec<usize>> {
        self.find(&|k| matches!(k, NodeKind::Band(_)))
    }
    /// The paths and marks of every mark node, in pre-order.
    pub fn marks(&self) -> Vec<(Vec<usize>, Mark)> {
        let mut v = Vec::new();
        self.visit(&mut |p, n| {
            if let NodeKind::Mark(m) = &n.kind {
                v.push((p.to_vec(), *m));
            }
        });
        v
    }
}

/// A transformation of schedule trees; the pipeline composes a list of these.
///
/// `Cx` is whatever the pass needs to read (the Scop, dependences, the target, options);
/// passes return a new tree and never keep state between runs.
pub trait Pass<Cx: ?Sized> {
    /// A short name, as `polyc dump` and `--load-tree PASS=file` use it.
    fn name(&self) -> &'static str;
    /// Transforms `tree`.
    fn run(&self, tree: ScheduleTree, cx: &Cx) -> miette::Result<ScheduleTree>;
}
