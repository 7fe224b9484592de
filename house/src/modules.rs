//! A crate's module tree, read from its root file, and the imports between its files.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use syn::visit::Visit;

/// One function longer than the limit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LongFn {
    /// The file, relative to the repository root.
    pub file: PathBuf,
    /// The line of its `fn` keyword.
    pub line: usize,
    /// Its name (`Type::name` for methods).
    pub name: String,
    /// Lines from `fn` to the closing brace.
    pub lines: usize,
}

/// One `use` leaf: the path and the name it binds (`None` for a glob).
#[derive(Clone, Debug)]
pub struct UsePath {
    /// The path's segments as written.
    pub segs: Vec<String>,
    /// The bound name, or `None` for `path::*`.
    pub alias: Option<String>,
    /// A `pub use`: a re-export, which ties the files only if this module's own code uses
    /// the name.
    pub reexport: bool,
}

/// One module: a file, or an inline `mod x { .. }` inside one.
#[derive(Debug)]
pub struct Module {
    /// The module's path from the crate root (empty for the root).
    pub path: Vec<String>,
    /// Its file, relative to the repository root.
    pub file: PathBuf,
    /// For an inline module, the module it sits in.
    pub inline_of: Option<usize>,
    /// Its items (test modules and test functions left out).
    pub items: Vec<syn::Item>,
    /// The names it defines (items and child modules).
    pub defs: BTreeSet<String>,
    /// Its `use` leaves.
    pub uses: Vec<UsePath>,
}

/// A crate's modules, by path.
#[derive(Debug, Default)]
pub struct CrateTree {
    /// Every module, the root first.
    pub modules: Vec<Module>,
    by_path: HashMap<Vec<String>, usize>,
}

/// Whether attributes mark test-only code.
fn is_test(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        let p = a.path();
        if p.is_ident("test") {
            return true;
        }
        if p.is_ident("cfg") {
            if let syn::Meta::List(l) = &a.meta {
                let t = l.tokens.to_string();
                return t == "test" || t.starts_with("all (test") || t.starts_with("all(test");
            }
        }
        false
    })
}

fn item_attrs(item: &syn::Item) -> &[syn::Attribute] {
    use syn::Item::*;
    match item {
        Const(i) => &i.attrs,
        Enum(i) => &i.attrs,
        ExternCrate(i) => &i.attrs,
        Fn(i) => &i.attrs,
        ForeignMod(i) => &i.attrs,
        Impl(i) => &i.attrs,
        Macro(i) => &i.attrs,
        Mod(i) => &i.attrs,
        Static(i) => &i.attrs,
        Struct(i) => &i.attrs,
        Trait(i) => &i.attrs,
        TraitAlias(i) => &i.attrs,
        Type(i) => &i.attrs,
        Union(i) => &i.attrs,
        Use(i) => &i.attrs,
        _ => &[],
    }
}

fn item_name(item: &syn::Item) -> Option<String> {
    use syn::Item::*;
    let id = match item {
        Const(i) => &i.ident,
        Enum(i) => &i.ident,
        Fn(i) => &i.sig.ident,
        Mod(i) => &i.ident,
        Static(i) => &i.ident,
        Struct(i) => &i.ident,
        Trait(i) => &i.ident,
        TraitAlias(i) => &i.ident,
        Type(i) => &i.ident,
        Union(i) => &i.ident,
        Macro(i) => i.ident.as_ref()?,
        _ => return None,
    };
    Some(id.to_string())
}

fn flatten_use(tree: &syn::UseTree, prefix: &mut Vec<String>, out: &mut Vec<UsePath>) {
    match tree {
        syn::UseTree::Path(p) => {
            prefix.push(p.ident.to_string());
            flatten_use(&p.tree, prefix, out);
            prefix.pop();
        }
        syn::UseTree::Name(n) => {
            let name = n.ident.to_string();
            if name == "self" {
                if let Some(last) = prefix.last() {
                    out.push(UsePath {
                        segs: prefix.clone(),
                        alias: Some(last.clone()),
                        reexport: false,
                    });
                }
            } else {
                let mut segs = prefix.clone();
                segs.push(name.clone());
                out.push(UsePath {
                    segs,
                    alias: Some(name),
                    reexport: false,
                });
            }
        }
        syn::UseTree::Rename(r) => {
            let mut segs = prefix.clone();
            if r.ident != "self" {
                segs.push(r.ident.to_string());
            }
            out.push(UsePath {
                segs,
                alias: Some(r.rename.to_string()),
                reexport: false,
            });
        }
        syn::UseTree::Glob(_) => out.push(UsePath {
            segs: prefix.clone(),
            alias: None,
            reexport: false,
        }),
        syn::UseTree::Group(g) => {
            for t in &g.items {
                flatten_use(t, prefix, out);
            }
        }
    }
}

/// The folder a module's child files live in.
fn child_dir(file: &Path, path_in_file: &[String]) -> PathBuf {
    let dir = file.parent().unwrap_or(Path::new("")).to_path_buf();
    let stem = file.file_stem().and_then(|s| s.to_str()).unwrap_or("");
    let mut d = if matches!(stem, "lib" | "main" | "mod") {
        dir
    } else {
        dir.join(stem)
    };
    for p in path_in_file {
        d = d.join(p);
    }
    d
}

fn path_attr(attrs: &[syn::Attribute]) -> Option<String> {
    attrs.iter().find_map(|a| match &a.meta {
        syn::Meta::NameValue(nv) if nv.path.is_ident("path") => match &nv.value {
            syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(s),
                ..
            }) => Some(s.value()),
            _ => None,
        },
        _ => None,
    })
}

/// Reads a crate from its root file (`root_file`), naming files relative to `repo`.
pub fn load_crate(repo: &Path, root_file: &Path) -> Result<CrateTree, String> {
    let mut tree = CrateTree::default();
    let file = parse(root_file)?;
    tree.add(repo, root_file, vec![], None, file.items, &[])?;
    Ok(tree)
}

fn parse(file: &Path) -> Result<syn::File, String> {
    let text = std::fs::read_to_string(file).map_err(|e| format!("{}: {e}", file.display()))?;
    syn::parse_file(&text).map_err(|e| {
        let at = e.span().start();
        format!("{}:{}:{}: {e}", file.display(), at.line, at.column + 1)
    })
}

impl CrateTree {
    /// Adds a module and, recursively, its children. `in_file` is the inline-module path
    /// inside `abs_file`.
    fn add(
        &mut self,
        repo: &Path,
        abs_file: &Path,
        path: Vec<String>,
        inline_of: Option<usize>,
        items: Vec<syn::Item>,
        in_file: &[String],
    ) -> Result<(), String> {
        let items: Vec<syn::Item> = items
            .into_iter()
            .filter(|i| !is_test(item_attrs(i)))
            .collect();
        let mut defs = BTreeSet::new();
        let mut uses = Vec::new();
        for i in &items {
            defs.extend(item_name(i));
            if let syn::Item::Use(u) = i {
                let first = uses.len();
                flatten_use(&u.tree, &mut Vec::new(), &mut uses);
                let reexport = !matches!(u.vis, syn::Visibility::Inherited);
                for leaf in &mut uses[first..] {
                    leaf.reexport = reexport;
                }
            }
        }
        let rel = abs_file
            .strip_prefix(repo)
            .unwrap_or(abs_file)
            .to_path_buf();
        let me = self.modules.len();
        self.by_path.insert(path.clone(), me);
        let mods: Vec<syn::ItemMod> = items
            .iter()
            .filter_map(|i| match i {
                syn::Item::Mod(m) => Some(m.clone()),
                _ => None,
            })
            .collect();
        self.modules.push(Module {
            path: path.clone(),
            file: rel,
            inline_of,
            items,
            defs,
            uses,
        });
        for m in mods {
            let name = m.ident.to_string();
            let mut child = path.clone();
            child.push(name.clone());
            if let Some((_, content)) = m.content {
                let mut inner = in_file.to_vec();
                inner.push(name);
                self.add(repo, abs_file, child, Some(me), content, &inner)?;
                continue;
            }
            let dir = child_dir(abs_file, in_file);
            let f = match path_attr(&m.attrs) {
                Some(p) => abs_file.parent().unwrap_or(Path::new("")).join(p),
                None if dir.join(format!("{name}.rs")).exists() => dir.join(format!("{name}.rs")),
                None => dir.join(&name).join("mod.rs"),
            };
            let parsed = parse(&f)?;
            self.add(repo, &f, child, None, parsed.items, &[])?;
        }
        Ok(())
    }

    /// A path as written in module `m`, made absolute (from the crate root); `None` for a
    /// path into another crate, a local variable or a generic parameter.
    fn absolute(&self, m: usize, segs: &[String]) -> Option<Vec<String>> {
        self.absolute_at(m, segs, 0)
    }

    fn absolute_at(&self, m: usize, segs: &[String], depth: usize) -> Option<Vec<String>> {
        if depth > 8 {
            return None;
        }
        let module = &self.modules[m];
        let first = segs.first()?;
        let mut out = match first.as_str() {
            "crate" => vec![],
            "self" => module.path.clone(),
            "super" => {
                let ups = segs.iter().take_while(|s| *s == "super").count();
                let keep = module.path.len().checked_sub(ups)?;
                let mut p = module.path[..keep].to_vec();
                p.extend(segs[ups..].iter().cloned());
                return Some(p);
            }
            "Self" => return None,
            _ if module.defs.contains(first) => {
                let mut p = module.path.clone();
                p.extend(segs.iter().cloned());
                return Some(p);
            }
            _ => {
                let u = module
                    .uses
                    .iter()
                    .find(|u| u.alias.as_deref() == Some(first))?;
                if u.segs.first() == Some(first) && u.segs.len() == 1 {
                    return None; // `use serde;`: an extern crate
                }
                let mut p = self.absolute_at(m, &u.segs, depth + 1)?;
                p.extend(segs[1..].iter().cloned());
                return Some(p);
            }
        };
        out.extend(segs[1..].iter().cloned());
        Some(out)
    }

    /// The module that defines what an absolute path names, following `use` re-exports
    /// and globs; `None` when the name is not found there.
    fn lookup(&self, abs: &[String], depth: usize) -> Option<usize> {
        if depth > 24 {
            return None;
        }
        let k = (0..=abs.len())
            .rev()
            .find(|k| self.by_path.contains_key(&abs[..*k]))?;
        let m = self.by_path[&abs[..k]];
        if k == abs.len() {
            return Some(m);
        }
        let name = &abs[k];
        if self.modules[m].defs.contains(name) {
            return Some(m);
        }
        let module = &self.modules[m];
        if let Some(u) = module
            .uses
            .iter()
            .find(|u| u.alias.as_deref() == Some(name))
        {
            let mut p = self.absolute(m, &u.segs)?;
            p.extend(abs[k + 1..].iter().cloned());
            return self.lookup(&p, depth + 1);
        }
        module
            .uses
            .iter()
            .filter(|u| u.alias.is_none())
            .find_map(|u| {
                let mut p = self.absolute(m, &u.segs)?;
                if p.is_empty() && u.segs.first().map(String::as_str) != Some("crate") {
                    return None;
                }
                p.extend(abs[k..].iter().cloned());
                self.lookup(&p, depth + 1)
            })
    }

    /// The file a path written in module `m` leads to.
    fn target(&self, m: usize, segs: &[String]) -> Option<PathBuf> {
        let abs = self.absolute(m, segs)?;
        let found = self.lookup(&abs, 0).or_else(|| {
            let k = (0..=abs.len())
                .rev()
                .find(|k| self.by_path.contains_key(&abs[..*k]))?;
            Some(self.by_path[&abs[..k]])
        })?;
        Some(self.modules[found].file.clone())
    }

    /// Every import of the crate: (importing file, file of the item, the path written).
    pub fn imports(&self) -> Vec<(PathBuf, PathBuf, String)> {
        let mut out = Vec::new();
        for (m, module) in self.modules.iter().enumerate() {
            let label = |segs: &[String]| {
                let s: Vec<&str> = segs
                    .iter()
                    .map(String::as_str)
                    .filter(|s| !matches!(*s, "crate" | "self" | "super"))
                    .collect();
                s.join("::")
            };
            let mut paths = PathCollector::default();
            for i in &module.items {
                paths.visit_item(i);
            }
            for u in &module.uses {
                let Some(alias) = &u.alias else { continue };
                if u.reexport && !paths.names.contains(alias) {
                    continue;
                }
                if let Some(t) = self.target(m, &u.segs) {
                    out.push((module.file.clone(), t, label(&u.segs)));
                }
            }
            for segs in paths.paths {
                if let Some(t) = self.target(m, &segs) {
                    out.push((module.file.clone(), t, label(&segs)));
                }
            }
            // A glob import ties the files only through the names the module uses from it.
            for u in module
                .uses
                .iter()
                .filter(|u| u.alias.is_none() && !u.reexport)
            {
                let Some(base) = self.absolute(m, &u.segs) else {
                    continue;
                };
                for name in &paths.names {
                    if module.defs.contains(name) {
                        continue;
                    }
                    let mut p = base.clone();
                    p.push(name.clone());
                    if let Some(found) = self.lookup(&p, 0) {
                        out.push((
                            module.file.clone(),
                            self.modules[found].file.clone(),
                            name.clone(),
                        ));
                    }
                }
            }
        }
        out
    }
}

/// Every path of two or more segments in code (test code, `use` items and nested modules
/// left out: the modules are visited on their own).
#[derive(Default)]
struct PathCollector {
    paths: Vec<Vec<String>>,
    names: BTreeSet<String>,
}

impl<'a> Visit<'a> for PathCollector {
    fn visit_item(&mut self, i: &'a syn::Item) {
        if is_test(item_attrs(i)) || matches!(i, syn::Item::Mod(_) | syn::Item::Use(_)) {
            return;
        }
        syn::visit::visit_item(self, i);
    }
    fn visit_impl_item_fn(&mut self, f: &'a syn::ImplItemFn) {
        if !is_test(&f.attrs) {
            syn::visit::visit_impl_item_fn(self, f);
        }
    }
    fn visit_path(&mut self, p: &'a syn::Path) {
        if p.segments.len() >= 2 && p.leading_colon.is_none() {
            self.paths
                .push(p.segments.iter().map(|s| s.ident.to_string()).collect());
        }
        if let Some(first) = p.segments.first() {
            self.names.insert(first.ident.to_string());
        }
        syn::visit::visit_path(self, p);
    }
}

/// The functions of a file module (and the inline modules in it) longer than `max` lines.
pub fn long_fns(module: &Module, max: usize) -> Vec<LongFn> {
    let mut v = FnLengths {
        file: module.file.clone(),
        max,
        owner: vec![],
        out: vec![],
    };
    for i in &module.items {
        v.visit_item(i);
    }
    v.out
}

struct FnLengths {
    file: PathBuf,
    max: usize,
    owner: Vec<String>,
    out: Vec<LongFn>,
}

impl FnLengths {
    fn record(&mut self, attrs: &[syn::Attribute], sig: &syn::Signature, block: &syn::Block) {
        if is_test(attrs) {
            return;
        }
        let start = sig.fn_token.span.start().line;
        let end = block.brace_token.span.close().end().line;
        let lines = end + 1 - start;
        if lines > self.max {
            let name = match self.owner.last() {
                Some(o) => format!("{o}::{}", sig.ident),
                None => sig.ident.to_string(),
            };
            self.out.push(LongFn {
                file: self.file.clone(),
                line: start,
                name,
                lines,
            });
        }
    }
}

impl<'a> Visit<'a> for FnLengths {
    fn visit_item(&mut self, i: &'a syn::Item) {
        if is_test(item_attrs(i)) || matches!(i, syn::Item::Mod(_)) {
            return;
        }
        syn::visit::visit_item(self, i);
    }
    fn visit_item_fn(&mut self, f: &'a syn::ItemFn) {
        self.record(&f.attrs, &f.sig, &f.block);
        syn::visit::visit_item_fn(self, f);
    }
    fn visit_item_impl(&mut self, i: &'a syn::ItemImpl) {
        let owner = match &*i.self_ty {
            syn::Type::Path(p) => p.path.segments.last().map(|s| s.ident.to_string()),
            _ => None,
        };
        self.owner.push(owner.unwrap_or_else(|| "impl".into()));
        syn::visit::visit_item_impl(self, i);
        self.owner.pop();
    }
    fn visit_item_trait(&mut self, t: &'a syn::ItemTrait) {
        self.owner.push(t.ident.to_string());
        syn::visit::visit_item_trait(self, t);
        self.owner.pop();
    }
    fn visit_impl_item_fn(&mut self, f: &'a syn::ImplItemFn) {
        self.record(&f.attrs, &f.sig, &f.block);
        syn::visit::visit_impl_item_fn(self, f);
    }
    fn visit_trait_item_fn(&mut self, f: &'a syn::TraitItemFn) {
        if let Some(b) = &f.default {
            self.record(&f.attrs, &f.sig, b);
        }
        syn::visit::visit_trait_item_fn(self, f);
    }
}
