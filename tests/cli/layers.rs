//! The shape of `src/`, read with syn: each layer imports only the layers below it, no files
//! import each other in a circle, and functions fit a screen.
//!
//! An import is any path that names an item of another file of the crate: a `use`, or a
//! qualified path in code (`crate::io::sink::LineSink`, `super::plan::ReadPlan`,
//! `window::run` through a child module). A path through a re-export counts as an import of
//! the file that re-exports (`crate::runtime::Counters` imports `runtime/mod.rs`, which
//! imports `runtime/summary.rs`). Declaring a child module (`mod drive;`) is not an import,
//! and test code (`#[cfg(test)]`) is left out: it may reach wherever it checks.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use proc_macro2::Span;
use syn::spanned::Spanned;
use syn::visit::Visit;

/// The layers from the bottom up: a file may import its own layer and those before it.
/// `error.rs` sits between the pure core and the runtime: every layer above reports with it.
const LAYERS: [&str; 8] = [
    "core", "error", "runtime", "io", "report", "cli", "cmd", "main",
];

/// The longest a function may be, in lines from `fn` to its closing brace.
const MAX_FUNCTION_LINES: usize = 80;

/// Functions allowed to be longer: declarative tables, not logic.
const LONG_BY_DESIGN: [&str; 0] = [];

struct SourceFile {
    /// Relative to `src/`, e.g. `runtime/drive.rs`.
    name: String,
    /// The module the file is, e.g. `["runtime", "drive"]`; `lib.rs` is `[]`.
    module: Vec<String>,
    syntax: syn::File,
}

fn source_files() -> Vec<SourceFile> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut paths = Vec::new();
    collect_rs(&src, &mut paths);
    paths.sort();
    paths
        .into_iter()
        .map(|path| {
            let name = path
                .strip_prefix(&src)
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/");
            let text = std::fs::read_to_string(&path).unwrap();
            let syntax = syn::parse_file(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
            SourceFile {
                module: module_of(&name),
                name,
                syntax,
            }
        })
        .collect()
}

fn collect_rs(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            collect_rs(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// `runtime/checkpoint/mod.rs` → `[runtime, checkpoint]`; `lib.rs` → `[]`.
fn module_of(name: &str) -> Vec<String> {
    let stem = name.strip_suffix(".rs").unwrap();
    let mut parts: Vec<String> = stem.split('/').map(str::to_string).collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib")) {
        parts.pop();
    }
    parts
}

fn is_test_only(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("cfg")
            && a.parse_args::<syn::Meta>()
                .is_ok_and(|m| m.path().is_ident("test"))
    })
}

/// The paths one file names, made absolute (from the crate root) where they start at the
/// crate, a parent, the module itself or a child module; other paths (std, crates, local
/// names) are left out.
struct Imports<'a> {
    file_module: &'a [String],
    /// The module being read: the file's, or an inline module in it.
    module: Vec<String>,
    /// Child modules the file declares (`mod x;`), by name.
    children: BTreeSet<String>,
    /// Names a `use` brought in, to the absolute path they stand for.
    aliases: BTreeMap<String, Vec<String>>,
    found: Vec<Vec<String>>,
}

impl Imports<'_> {
    fn absolute(&self, segments: &[String]) -> Option<Vec<String>> {
        let (first, rest) = segments.split_first()?;
        let mut base = match first.as_str() {
            "crate" | "weir" => Vec::new(),
            "self" => self.module.clone(),
            "super" => {
                let mut m = self.module.clone();
                m.pop();
                let mut rest = rest;
                while rest.first().is_some_and(|s| s == "super") {
                    m.pop();
                    rest = &rest[1..];
                }
                m.extend(rest.iter().cloned());
                return Some(m);
            }
            name if self.children.contains(name) && self.module == self.file_module => {
                let mut m = self.module.clone();
                m.push(name.to_string());
                m
            }
            name => self.aliases.get(name)?.clone(),
        };
        base.extend(rest.iter().cloned());
        Some(base)
    }

    fn note(&mut self, segments: &[String]) {
        if let Some(path) = self.absolute(segments) {
            self.found.push(path);
        }
    }

    /// The full paths of a use tree, each with the name it brings in (none for a glob).
    fn use_paths(
        tree: &syn::UseTree,
        prefix: &mut Vec<String>,
        out: &mut Vec<(Vec<String>, Option<String>)>,
    ) {
        match tree {
            syn::UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                Self::use_paths(&p.tree, prefix, out);
                prefix.pop();
            }
            syn::UseTree::Name(n) => {
                let name = n.ident.to_string();
                let mut path = prefix.clone();
                if name != "self" {
                    path.push(name.clone());
                }
                let local = if name == "self" {
                    prefix.last().cloned()
                } else {
                    Some(name)
                };
                out.push((path, local));
            }
            syn::UseTree::Rename(r) => {
                let mut path = prefix.clone();
                if r.ident != "self" {
                    path.push(r.ident.to_string());
                }
                out.push((path, Some(r.rename.to_string())));
            }
            syn::UseTree::Glob(_) => out.push((prefix.clone(), None)),
            syn::UseTree::Group(g) => {
                for t in &g.items {
                    Self::use_paths(t, prefix, out);
                }
            }
        }
    }
}

/// Collects child module declarations and `use` aliases, before paths are resolved.
struct Declarations<'a, 'b>(&'b mut Imports<'a>);

impl<'ast> Visit<'ast> for Declarations<'_, '_> {
    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        if m.content.is_none() {
            self.0.children.insert(m.ident.to_string());
        }
    }
    fn visit_item_fn(&mut self, _: &'ast syn::ItemFn) {}
    fn visit_item_impl(&mut self, _: &'ast syn::ItemImpl) {}
    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        if is_test_only(&u.attrs) {
            return;
        }
        let mut paths = Vec::new();
        Imports::use_paths(&u.tree, &mut Vec::new(), &mut paths);
        for (path, local) in paths {
            if let (Some(local), Some(abs)) = (local, self.0.absolute(&path)) {
                self.0.aliases.insert(local, abs);
            }
        }
    }
}

impl<'ast> Visit<'ast> for Imports<'_> {
    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        if is_test_only(&m.attrs) {
            return;
        }
        if let Some((_, items)) = &m.content {
            self.module.push(m.ident.to_string());
            for item in items {
                self.visit_item(item);
            }
            self.module.pop();
        }
    }
    fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
        if !is_test_only(&f.attrs) {
            syn::visit::visit_item_fn(self, f);
        }
    }
    fn visit_item_impl(&mut self, i: &'ast syn::ItemImpl) {
        if !is_test_only(&i.attrs) {
            syn::visit::visit_item_impl(self, i);
        }
    }
    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        if is_test_only(&u.attrs) {
            return;
        }
        let mut paths = Vec::new();
        Imports::use_paths(&u.tree, &mut Vec::new(), &mut paths);
        for (path, _) in paths {
            self.note(&path);
        }
    }
    fn visit_path(&mut self, p: &'ast syn::Path) {
        let segments: Vec<String> = p.segments.iter().map(|s| s.ident.to_string()).collect();
        if segments.len() > 1 {
            self.note(&segments);
        }
        syn::visit::visit_path(self, p);
    }
}

/// Each file's imports, as the files they name.
fn import_graph(files: &[SourceFile]) -> BTreeMap<String, BTreeSet<String>> {
    let by_module: BTreeMap<&[String], &str> = files
        .iter()
        .map(|f| (f.module.as_slice(), f.name.as_str()))
        .collect();
    let mut graph = BTreeMap::new();
    for file in files {
        let mut imports = Imports {
            file_module: &file.module,
            module: file.module.clone(),
            children: BTreeSet::new(),
            aliases: BTreeMap::new(),
            found: Vec::new(),
        };
        Declarations(&mut imports).visit_file(&file.syntax);
        imports.visit_file(&file.syntax);
        let mut targets = BTreeSet::new();
        for path in &imports.found {
            // The file of the longest prefix that is a module of its own.
            let target = (0..=path.len())
                .rev()
                .find_map(|n| by_module.get(&path[..n]))
                .copied();
            if let Some(t) = target.filter(|t| *t != file.name && *t != "lib.rs") {
                targets.insert(t.to_string());
            }
        }
        graph.insert(file.name.clone(), targets);
    }
    graph
}

fn layer_of(file: &str) -> usize {
    let top = file.split('/').next().unwrap().trim_end_matches(".rs");
    LAYERS
        .iter()
        .position(|l| *l == top)
        .unwrap_or_else(|| panic!("{file}: in no layer of {LAYERS:?}"))
}

#[test]
fn no_layer_imports_a_layer_above_it() {
    let graph = import_graph(&source_files());
    let mut wrong = Vec::new();
    for (file, targets) in &graph {
        for target in targets {
            if layer_of(target) > layer_of(file) {
                wrong.push(format!("{file} imports {target}"));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "layers are {LAYERS:?}, each importing only those before it:\n{}",
        wrong.join("\n")
    );
}

/// The check itself, on the rule the runtime and core keep most: neither reaches the
/// adapters, the commands or the command line.
#[test]
fn runtime_and_core_import_no_io_cmd_or_cli() {
    let graph = import_graph(&source_files());
    let wrong: Vec<String> = graph
        .iter()
        .filter(|(file, _)| file.starts_with("runtime/") || file.starts_with("core/"))
        .flat_map(|(file, targets)| {
            targets
                .iter()
                .filter(|t| ["io/", "cmd/", "cli.rs"].iter().any(|l| t.starts_with(l)))
                .map(move |t| format!("{file} imports {t}"))
        })
        .collect();
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// Tarjan's strongly connected components with more than one file.
fn circles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct State<'g> {
        graph: &'g BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'g str, usize>,
        low: BTreeMap<&'g str, usize>,
        stack: Vec<&'g str>,
        on_stack: BTreeSet<&'g str>,
        found: Vec<Vec<String>>,
    }
    fn connect<'g>(s: &mut State<'g>, v: &'g str) {
        let n = s.index.len();
        s.index.insert(v, n);
        s.low.insert(v, n);
        s.stack.push(v);
        s.on_stack.insert(v);
        for w in s.graph.get(v).into_iter().flatten() {
            let w = w.as_str();
            if !s.index.contains_key(w) {
                connect(s, w);
                let lw = s.low[w];
                s.low.entry(v).and_modify(|l| *l = (*l).min(lw));
            } else if s.on_stack.contains(w) {
                let iw = s.index[w];
                s.low.entry(v).and_modify(|l| *l = (*l).min(iw));
            }
        }
        if s.low[v] == s.index[v] {
            let mut component = Vec::new();
            loop {
                let w = s.stack.pop().unwrap();
                s.on_stack.remove(w);
                component.push(w.to_string());
                if w == v {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort();
                s.found.push(component);
            }
        }
    }
    let mut s = State {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        found: Vec::new(),
    };
    for v in graph.keys() {
        if !s.index.contains_key(v.as_str()) {
            connect(&mut s, v);
        }
    }
    s.found
}

#[test]
fn no_files_import_each_other_in_a_circle() {
    let found = circles(&import_graph(&source_files()));
    let shown: Vec<String> = found.iter().map(|c| c.join(" ↔ ")).collect();
    assert!(found.is_empty(), "import circles:\n{}", shown.join("\n"));
}

#[test]
fn the_circle_check_finds_a_circle() {
    let graph: BTreeMap<String, BTreeSet<String>> = [
        ("a.rs", vec!["b.rs"]),
        ("b.rs", vec!["c.rs"]),
        ("c.rs", vec!["a.rs"]),
        ("d.rs", vec!["a.rs"]),
    ]
    .into_iter()
    .map(|(f, t)| (f.into(), t.into_iter().map(String::from).collect()))
    .collect();
    assert_eq!(circles(&graph), vec![vec!["a.rs", "b.rs", "c.rs"]]);
}

/// Every function's length, in lines from `fn` to its closing brace.
struct Lengths<'a> {
    file: &'a str,
    found: Vec<(String, usize, usize)>,
}

impl Lengths<'_> {
    fn note(&mut self, name: &syn::Ident, start: Span, end: Span) {
        let (from, to) = (start.start().line, end.end().line);
        self.found
            .push((format!("{}:{from} {name}", self.file), from, to - from + 1));
    }
}

impl<'ast> Visit<'ast> for Lengths<'_> {
    fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
        self.note(
            &f.sig.ident,
            f.sig.fn_token.span(),
            f.block.brace_token.span.close(),
        );
        syn::visit::visit_item_fn(self, f);
    }
    fn visit_impl_item_fn(&mut self, f: &'ast syn::ImplItemFn) {
        self.note(
            &f.sig.ident,
            f.sig.fn_token.span(),
            f.block.brace_token.span.close(),
        );
        syn::visit::visit_impl_item_fn(self, f);
    }
    fn visit_trait_item_fn(&mut self, f: &'ast syn::TraitItemFn) {
        if let Some(block) = &f.default {
            self.note(
                &f.sig.ident,
                f.sig.fn_token.span(),
                block.brace_token.span.close(),
            );
        }
        syn::visit::visit_trait_item_fn(self, f);
    }
}

/// Functions of `src/` longer than `MAX_FUNCTION_LINES`, longest first.
fn long_functions() -> Vec<(String, usize)> {
    let mut long = Vec::new();
    for file in source_files() {
        let mut lengths = Lengths {
            file: &file.name,
            found: Vec::new(),
        };
        lengths.visit_file(&file.syntax);
        for (name, _, lines) in lengths.found {
            let exempt = LONG_BY_DESIGN.iter().any(|e| name.ends_with(e));
            if lines > MAX_FUNCTION_LINES && !exempt {
                long.push((name, lines));
            }
        }
    }
    long.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    long
}

#[test]
fn functions_fit_a_screen() {
    let long = long_functions();
    let shown: Vec<String> = long.iter().map(|(f, n)| format!("{n:4} {f}")).collect();
    assert!(
        long.is_empty(),
        "functions over {MAX_FUNCTION_LINES} lines:\n{}",
        shown.join("\n")
    );
}
