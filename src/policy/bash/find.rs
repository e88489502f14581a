//! `find`: starting points, then an expression of tests and actions.
//!
//! Tests that name files (`-newer F`, `-samefile F`) read them; actions
//! that write (`-delete`, `-fprint`, `-fls`) or follow links out of the
//! tree (`-L`, `-follow`) are refused. `-exec`/`-execdir`/`-ok` run their
//! command, which must be read-only; each `{}` is a path under a starting
//! point, which is only safe to open when the expression keeps to regular
//! files (`-type f` with no `-o`), since a link could lead out.

use super::check::Checker;
use super::plan::Arg;

type R<T> = Result<T, String>;

/// Tests that take one argument that is not a path.
const VALUED: &[&str] = &[
    "-name",
    "-iname",
    "-path",
    "-ipath",
    "-wholename",
    "-iwholename",
    "-regex",
    "-iregex",
    "-lname",
    "-ilname",
    "-type",
    "-xtype",
    "-size",
    "-perm",
    "-user",
    "-group",
    "-uid",
    "-gid",
    "-links",
    "-inum",
    "-mtime",
    "-atime",
    "-ctime",
    "-mmin",
    "-amin",
    "-cmin",
    "-used",
    "-maxdepth",
    "-mindepth",
    "-regextype",
    "-fstype",
    "-context",
    "-printf",
];
/// Tests that take a path they stat.
const PATHS: &[&str] = &["-newer", "-anewer", "-cnewer", "-samefile"];
const BARE: &[&str] = &[
    "-empty",
    "-executable",
    "-readable",
    "-writable",
    "-nouser",
    "-nogroup",
    "-true",
    "-false",
    "-prune",
    "-quit",
    "-depth",
    "-d",
    "-mount",
    "-xdev",
    "-noleaf",
    "-daystart",
    "-ignore_readdir_race",
    "-noignore_readdir_race",
    "-print",
    "-print0",
    "-ls",
    "(",
    ")",
    "!",
    "-not",
    "-a",
    "-and",
    "-o",
    "-or",
    ",",
    "-nowarn",
    "-warn",
];

pub(crate) fn check(c: &mut Checker, args: &[Arg], depth: usize) -> R<()> {
    let mut i = 0;
    // Global options before the starting points.
    while let Some(a) = args.get(i).and_then(Arg::lit) {
        match a {
            "-P" => i += 1,
            "-H" | "-L" => return Err(format!("find {a} follows links out of the tree")),
            a if a.starts_with("-O") => i += 1,
            a if a.starts_with("-D") => return Err("find -D is not analysed".into()),
            _ => break,
        }
    }
    let mut roots = Vec::new();
    while let Some(a) = args.get(i) {
        match a {
            Arg::Lit(s) if s.starts_with('-') || matches!(s.as_str(), "(" | ")" | "!" | ",") => {
                break;
            }
            Arg::Lit(_) => roots.push(a.clone()),
            other => {
                return Err(format!(
                    "find searches a path computed at run time ({})",
                    other.show()
                ));
            }
        }
        i += 1;
    }
    if roots.is_empty() {
        roots.push(Arg::Lit(".".into()));
    }
    for r in &roots {
        c.read(r, false, "find")?;
    }
    let expr = &args[i..];
    let regular_only = keeps_to_regular_files(expr);
    let mut j = 0;
    while j < expr.len() {
        let Some(t) = expr[j].lit() else {
            return Err(format!(
                "find gets an expression computed at run time ({})",
                expr[j].show()
            ));
        };
        j += 1;
        match t {
            t if BARE.contains(&t) => {}
            t if VALUED.contains(&t) => {
                if expr.get(j).is_none_or(|a| matches!(a, Arg::Many { .. })) {
                    return Err(format!("find {t} without a literal value"));
                }
                j += 1;
            }
            t if PATHS.contains(&t) || (t.starts_with("-newer") && t.len() == 8) => {
                let v = expr
                    .get(j)
                    .ok_or_else(|| format!("find {t} without a file"))?;
                // -newerXt takes a time, not a file.
                if !t.ends_with('t') || t == "-newer" {
                    c.read(v, false, "find")?;
                }
                j += 1;
            }
            "-exec" | "-execdir" | "-ok" | "-okdir" => {
                let end = expr[j..]
                    .iter()
                    .position(|a| matches!(a.lit(), Some(";" | "+")))
                    .ok_or_else(|| format!("find {t} without its ; or +"))?;
                let inner = &expr[j..j + end];
                j += end + 1;
                let uses_found = inner
                    .iter()
                    .any(|a| a.lit().is_some_and(|s| s.contains("{}")));
                if uses_found && !regular_only {
                    return Err(format!(
                        "find {t} passes found paths that may be links out of the tree (add -type f)"
                    ));
                }
                let mut argv = Vec::with_capacity(inner.len());
                for a in inner {
                    argv.push(match a.lit() {
                        Some("{}") if roots.len() == 1 => Arg::Under(root_dir(c, &roots[0])?),
                        Some(s) if s.contains("{}") => Arg::Opaque {
                            prefix: s[..s.find("{}").unwrap_or(0)].to_string(),
                        },
                        _ => a.clone(),
                    });
                }
                if argv.iter().any(|a| matches!(a, Arg::Opaque { .. }))
                    || (uses_found && roots.len() != 1)
                {
                    return Err(format!("find {t} builds paths that cannot be checked"));
                }
                c.exec_inner(&argv, depth + 1, t.ends_with("dir"))?;
            }
            "-delete" | "-fprint" | "-fprint0" | "-fprintf" | "-fls" => {
                return Err(format!("find {t} writes or deletes files"));
            }
            "-follow" => return Err("find -follow follows links out of the tree".into()),
            "-files0-from" => {
                return Err("find -files0-from reads its starting points from a file".into());
            }
            other => return Err(format!("find {other} is not analysed")),
        }
    }
    Ok(())
}

fn root_dir(c: &Checker, root: &Arg) -> R<std::path::PathBuf> {
    match root {
        Arg::Lit(s) => super::path::resolve(c.cwd().ok_or("find in a directory not known")?, s)
            .ok_or_else(|| {
                format!("{s} cannot be resolved (a loop of links, or .. after a missing directory)")
            }),
        _ => Err("find from a path computed at run time".into()),
    }
}

/// `-type f` at the top level of an expression without alternatives: every
/// path it passes on is a regular file, not a link.
fn keeps_to_regular_files(expr: &[Arg]) -> bool {
    let lits: Vec<&str> = expr.iter().filter_map(Arg::lit).collect();
    if lits
        .iter()
        .any(|t| matches!(*t, "-o" | "-or" | "," | "(" | ")"))
    {
        return false;
    }
    lits.windows(2)
        .enumerate()
        .any(|(k, w)| w == ["-type", "f"] && (k == 0 || !matches!(lits[k - 1], "!" | "-not")))
}
