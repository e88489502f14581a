//! Which repository config keys a read-only git command may meet: an
//! allow-list. A key is accepted only when it is known not to make git
//! run a program, contact a server or read a file elsewhere during `git
//! status`, `log`, `diff`, `show`, `blame`, `grep` and the other
//! auto-allowed subcommands; every other key asks, naming itself. A new
//! git version's new key asks until someone reads what it does.
//!
//! The list covers what `git init`, `git clone`, `git submodule add`,
//! `git worktree add`, `git sparse-checkout`, `git maintenance register`,
//! `git lfs install`, editors (VS Code's `branch.*.vscode-merge-base`)
//! and CI checkouts (`http.*.extraheader`, `gc.auto`) write. Keys that
//! name a file are accepted when the file is one git may read anyway
//! (checked by the caller); `filter.lfs.*` only with the values `git lfs
//! install` writes.

use super::config::Entry;

/// How a listed key's value is checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum V {
    /// Any value: the key names no program and no file.
    Any,
    /// A boolean (git's spellings, or no value).
    Bool,
    /// Exactly one of these, byte for byte.
    OneOf(&'static [&'static str]),
    /// A file git reads: the caller checks where it resolves.
    File,
    /// `core.worktree`: a directory, relative to the git directory.
    Worktree,
    /// Anything but `!command` (`submodule.*.update`).
    NotCommand,
}

use V::*;

/// `section.key`, `section.*.key` (any subsection), `section.sub.key`
/// (that subsection exactly), `section.*` (any key, no subsection),
/// `section.*.*`. Sections and keys in lowercase.
static ALLOWED: &[(&str, V)] = &[
    // What `git init`/`clone` write, and how the work tree and object
    // store are laid out and compared: facts, flags and sizes; no program,
    // no path.
    ("core.repositoryformatversion", Any),
    ("core.filemode", Any),
    ("core.bare", Any),
    ("core.logallrefupdates", Any),
    ("core.ignorecase", Any),
    ("core.precomposeunicode", Any),
    ("core.symlinks", Any),
    ("core.autocrlf", Any),
    ("core.eol", Any),
    // Only turns a conversion warning into an error.
    ("core.safecrlf", Any),
    ("core.checkroundtripencoding", Any),
    ("core.protecthfs", Any),
    ("core.protectntfs", Any),
    ("core.trustctime", Any),
    ("core.checkstat", Any),
    ("core.ignorestat", Any),
    ("core.quotepath", Any),
    ("core.abbrev", Any),
    ("core.whitespace", Any),
    ("core.sparsecheckout", Any),
    ("core.sparsecheckoutcone", Any),
    ("core.untrackedcache", Any),
    ("core.splitindex", Any),
    ("core.preloadindex", Any),
    ("core.commitgraph", Any),
    ("core.multipackindex", Any),
    ("core.compression", Any),
    ("core.loosecompression", Any),
    ("core.bigfilethreshold", Any),
    ("core.packedgitwindowsize", Any),
    ("core.packedgitlimit", Any),
    ("core.deltabasecachelimit", Any),
    ("core.warnambiguousrefs", Any),
    ("core.commentchar", Any),
    ("core.commentstring", Any),
    ("core.notesref", Any),
    ("core.usereplacerefs", Any),
    ("core.sharedrepository", Any),
    ("core.prefersymlinkrefs", Any),
    ("core.fsync", Any),
    ("core.fsyncmethod", Any),
    ("core.fsyncobjectfiles", Any),
    ("core.createobject", Any),
    ("core.filesreflocktimeout", Any),
    ("core.packedrefstimeout", Any),
    ("core.hidedotfiles", Any),
    ("core.longpaths", Any),
    ("core.fscache", Any),
    ("index.version", Any),
    ("index.sparse", Any),
    ("index.threads", Any),
    ("index.skiphash", Any),
    ("index.recordendofindexentries", Any),
    ("index.recordoffsettable", Any),
    ("feature.manyfiles", Any),
    ("feature.experimental", Any),
    ("pack.threads", Any),
    ("pack.usebitmaps", Any),
    ("pack.usesparse", Any),
    ("pack.window", Any),
    ("pack.depth", Any),
    ("pack.windowmemory", Any),
    ("pack.compression", Any),
    ("pack.packsizelimit", Any),
    ("pack.writebitmaphashcache", Any),
    ("pack.writereverseindex", Any),
    ("checkout.workers", Any),
    ("checkout.thresholdforparallelism", Any),
    ("extensions.objectformat", Any),
    ("extensions.worktreeconfig", Any),
    ("extensions.refstorage", Any),
    ("extensions.preciousobjects", Any),
    ("extensions.noop", Any),
    // Never run by an auto-allowed command: the hardened environment sets
    // core.hooksPath=/dev/null and core.fsmonitor=false over any config
    // (husky writes a hooks path).
    ("core.hookspath", Any),
    // A boolean turns git's own daemon on or off; anything else is a
    // program to run.
    ("core.fsmonitor", Bool),
    // A submodule's git directory names its work tree (checked to be the
    // repository's own or inside the working directories).
    ("core.worktree", Worktree),
    // Files git reads, never runs: accepted where git could read them
    // anyway (the working directories, the repository itself).
    ("core.excludesfile", File),
    ("core.attributesfile", File),
    ("blame.ignorerevsfile", File),
    ("mailmap.file", File),
    ("commit.template", File),
    // Remotes are contacted only by fetch, push, ls-remote and a partial
    // clone's lazy fetch, none auto-allowed (`remote.*.promisor`,
    // `partialclonefilter` and `extensions.partialclone` are not here:
    // with them `git show` fetches). `uploadpack`, `receivepack`, `vcs`
    // and `proxy` name programs or hosts and are not here either.
    ("remote.*.url", Any),
    ("remote.*.pushurl", Any),
    ("remote.*.fetch", Any),
    ("remote.*.push", Any),
    ("remote.*.mirror", Any),
    ("remote.*.tagopt", Any),
    ("remote.*.prune", Any),
    ("remote.*.prunetags", Any),
    ("remote.*.skipdefaultupdate", Any),
    ("remote.*.skipfetchall", Any),
    ("remote.*.gh-resolved", Any),
    ("remote.pushdefault", Any),
    // A branch's upstream, description and the notes tools keep with it
    // (VS Code's merge base, the GitHub extension's PR number): read by
    // status and pull; none runs anything.
    ("branch.*.*", Any),
    ("branch.autosetupmerge", Any),
    ("branch.autosetuprebase", Any),
    ("branch.sort", Any),
    // Submodules: where they come from and whether they are active.
    // `update = !cmd` runs cmd (on `git submodule update` only, which is
    // never auto-allowed; refused here anyway).
    ("submodule.*.url", Any),
    ("submodule.*.active", Any),
    ("submodule.*.update", NotCommand),
    ("submodule.*.branch", Any),
    ("submodule.*.fetchrecursesubmodules", Any),
    ("submodule.*.ignore", Any),
    ("submodule.*.shallow", Any),
    ("submodule.active", Any),
    ("submodule.recurse", Any),
    ("submodule.fetchjobs", Any),
    ("submodule.propagatebranches", Any),
    // Who commits, in which encoding: text only.
    ("user.name", Any),
    ("user.email", Any),
    ("user.signingkey", Any),
    ("user.useconfigonly", Any),
    ("author.name", Any),
    ("author.email", Any),
    ("committer.name", Any),
    ("committer.email", Any),
    ("i18n.commitencoding", Any),
    ("i18n.logoutputencoding", Any),
    // How commands that write behave (none is auto-allowed): flags and
    // names. Signing runs gpg only when committing or tagging.
    ("pull.rebase", Any),
    ("pull.ff", Any),
    ("push.default", Any),
    ("push.autosetupremote", Any),
    ("push.followtags", Any),
    ("fetch.prune", Any),
    ("fetch.prunetags", Any),
    ("fetch.writecommitgraph", Any),
    ("fetch.parallel", Any),
    ("fetch.recursesubmodules", Any),
    ("merge.ff", Any),
    ("merge.conflictstyle", Any),
    ("merge.renames", Any),
    ("merge.directoryrenames", Any),
    ("rebase.autosquash", Any),
    ("rebase.autostash", Any),
    ("rebase.updaterefs", Any),
    ("rerere.enabled", Any),
    ("rerere.autoupdate", Any),
    ("init.defaultbranch", Any),
    ("commit.gpgsign", Any),
    ("commit.verbose", Any),
    ("commit.cleanup", Any),
    ("tag.gpgsign", Any),
    ("tag.forcesignannotated", Any),
    ("checkout.defaultremote", Any),
    ("checkout.guess", Any),
    ("clone.defaultremotename", Any),
    ("worktree.guessremote", Any),
    ("maintenance.auto", Any),
    ("maintenance.strategy", Any),
    ("gc.auto", Any),
    ("gc.autopacklimit", Any),
    ("gc.autodetach", Any),
    ("gc.aggressivedepth", Any),
    ("gc.aggressivewindow", Any),
    ("gc.bigpackthreshold", Any),
    ("gc.writecommitgraph", Any),
    ("gc.logexpiry", Any),
    ("gc.packrefs", Any),
    ("gc.cruftpacks", Any),
    ("gc.pruneexpire", Any),
    ("gc.worktreepruneexpire", Any),
    ("gc.reflogexpire", Any),
    ("gc.reflogexpireunreachable", Any),
    ("gc.*.reflogexpire", Any),
    ("gc.*.reflogexpireunreachable", Any),
    ("gc.rerereresolved", Any),
    ("gc.rerereunresolved", Any),
    // How read-only commands print: colours, columns, formats of dates
    // and names, diff and rename options, regexes of diff drivers (their
    // `textconv` and `command` are not here).
    ("color.*", Any),
    ("color.*.*", Any),
    ("advice.*", Any),
    ("column.*", Any),
    ("diff.renames", Any),
    ("diff.renamelimit", Any),
    ("diff.algorithm", Any),
    ("diff.colormoved", Any),
    ("diff.colormovedws", Any),
    ("diff.context", Any),
    ("diff.interhunkcontext", Any),
    ("diff.mnemonicprefix", Any),
    ("diff.noprefix", Any),
    ("diff.srcprefix", Any),
    ("diff.dstprefix", Any),
    ("diff.relative", Any),
    ("diff.statgraphwidth", Any),
    ("diff.statnamewidth", Any),
    ("diff.submodule", Any),
    ("diff.suppressblankempty", Any),
    ("diff.wserrorhighlight", Any),
    ("diff.indentheuristic", Any),
    ("diff.ignoresubmodules", Any),
    ("diff.dirstat", Any),
    ("diff.autorefreshindex", Any),
    ("diff.wordregex", Any),
    ("diff.*.xfuncname", Any),
    ("diff.*.funcname", Any),
    ("diff.*.wordregex", Any),
    ("diff.*.binary", Any),
    ("log.abbrevcommit", Any),
    ("log.date", Any),
    ("log.decorate", Any),
    ("log.excludedecoration", Any),
    ("log.initialdecorationset", Any),
    ("log.diffmerges", Any),
    ("log.follow", Any),
    ("log.graphcolors", Any),
    ("log.showroot", Any),
    ("log.mailmap", Any),
    ("status.relativepaths", Any),
    ("status.short", Any),
    ("status.branch", Any),
    ("status.aheadbehind", Any),
    ("status.displaycommentprefix", Any),
    ("status.renamelimit", Any),
    ("status.renames", Any),
    ("status.showstash", Any),
    ("status.showuntrackedfiles", Any),
    ("status.submodulesummary", Any),
    ("blame.blankboundary", Any),
    ("blame.coloring", Any),
    ("blame.date", Any),
    ("blame.showemail", Any),
    ("blame.showroot", Any),
    ("blame.markunblamablelines", Any),
    ("blame.markignoredlines", Any),
    ("grep.linenumber", Any),
    ("grep.column", Any),
    ("grep.patterntype", Any),
    ("grep.extendedregexp", Any),
    ("grep.threads", Any),
    ("grep.fullname", Any),
    ("grep.fallbacktonoindex", Any),
    ("tag.sort", Any),
    ("versionsort.suffix", Any),
    ("mailmap.blob", Any),
    ("showbranch.default", Any),
    ("stash.showpatch", Any),
    ("stash.showstat", Any),
    ("stash.showincludeuntracked", Any),
    // Secrets and TLS switches for HTTP (actions/checkout writes the
    // header): used only when a server is contacted, which the hardened
    // environment forbids (protocol.allow=never) and no read-only
    // command does. Keys naming files (sslCAInfo, cookieFile) are not here.
    ("http.extraheader", Any),
    ("http.*.extraheader", Any),
    ("http.sslverify", Any),
    ("http.*.sslverify", Any),
    ("http.postbuffer", Any),
    ("http.version", Any),
    // git-lfs: what `git lfs install` and `git lfs clone` write. lfs is
    // not a wildcard: `lfs.extension.*` and `lfs.customtransfer.*` name
    // programs git-lfs runs.
    ("lfs.repositoryformatversion", Any),
    ("lfs.url", Any),
    ("lfs.pushurl", Any),
    ("lfs.locksverify", Any),
    ("lfs.fetchinclude", Any),
    ("lfs.fetchexclude", Any),
    ("lfs.*.access", Any),
    ("lfs.*.locksverify", Any),
    // The filter `git lfs install` writes, exactly (with and without
    // --skip-smudge): it runs `git-lfs`, found on PATH, which the caller
    // checks like any program a command runs.
    ("filter.lfs.clean", OneOf(&["git-lfs clean -- %f"])),
    (
        "filter.lfs.smudge",
        OneOf(&["git-lfs smudge -- %f", "git-lfs smudge --skip -- %f"]),
    ),
    (
        "filter.lfs.process",
        OneOf(&["git-lfs filter-process", "git-lfs filter-process --skip"]),
    ),
    ("filter.lfs.required", Bool),
];

/// Programs (by bare name) that accepted keys make git run.
pub(crate) fn programs(e: &Entry) -> Option<&'static str> {
    (e.section == "filter" && e.sub.as_deref() == Some(b"lfs")).then_some("git-lfs")
}

/// How `e`'s value is to be checked, or Err naming the key when it is
/// not on the list.
pub(crate) fn kind(e: &Entry) -> Result<V, String> {
    let found = ALLOWED.iter().find(|(pattern, _)| matches(pattern, e));
    let Some((_, v)) = found else {
        return Err(format!(
            "sets {}, which is not a key tern knows to be harmless for a read-only git command",
            e.name()
        ));
    };
    let value = e.value.as_deref();
    let ok = match v {
        Any | File | Worktree => true,
        Bool => value.is_none_or(is_bool),
        OneOf(set) => value.is_some_and(|x| set.iter().any(|s| s.as_bytes() == x)),
        NotCommand => value.is_none_or(|x| x.first() != Some(&b'!')),
    };
    if ok {
        Ok(*v)
    } else {
        Err(format!(
            "sets {} to {:?}, a value tern does not know to be harmless",
            e.name(),
            String::from_utf8_lossy(value.unwrap_or_default())
        ))
    }
}

fn is_bool(v: &[u8]) -> bool {
    ["true", "false", "yes", "no", "on", "off", "1", "0", ""]
        .iter()
        .any(|b| b.as_bytes().eq_ignore_ascii_case(v))
}

fn matches(pattern: &str, e: &Entry) -> bool {
    let Some((section, rest)) = pattern.split_once('.') else {
        return false;
    };
    if section != e.section {
        return false;
    }
    let (sub, key) = match rest.rsplit_once('.') {
        Some((sub, key)) => (Some(sub), key),
        None => (None, rest),
    };
    let sub_ok = match (sub, e.sub.as_deref()) {
        (None, None) => true,
        (Some("*"), Some(_)) => true,
        (Some(want), Some(got)) => want.as_bytes() == got,
        _ => false,
    };
    sub_ok && (key == "*" || key == e.key)
}
