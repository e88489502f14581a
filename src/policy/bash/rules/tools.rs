//! Multi-command tools, read as deny and ask rules need them: the
//! subcommand after the tool's global options. `Bash(git commit:*)` must
//! hold against `git -C . commit`, `git --no-pager commit` and
//! `/usr/lib/git-core/git-commit`.
//!
//! Each tool's table says which global options take a value. What the
//! table cannot read — an option it does not list followed by a word, a
//! value computed at run time where an option could stand, a subcommand
//! that an alias, a plugin or a package script could stand behind — gives
//! the form `TOOL …` with a hole for the rest, so a deny rule naming any
//! subcommand of the tool asks instead of being dodged.

use super::super::plan::Arg;

/// Lists are words separated by blanks; aliases are `short=canonical`.
struct Tool {
    name: &'static str,
    /// Global options that take the next word as their value (or
    /// `--opt=value`; short ones also `-Xvalue`).
    valued: &'static str,
    /// Global options that take no value.
    flags: &'static str,
    /// Subcommands that are the tool's own; any other name may be an
    /// alias, a plugin or a script (None: every name is the tool's own).
    commands: Option<&'static str>,
    /// The tool's own short names for its subcommands.
    aliases: &'static str,
    /// `+toolchain` before everything (rustup's proxy).
    toolchain: bool,
}

const GIT: Tool = Tool {
    name: "git",
    valued: "-C -c --git-dir --work-tree --namespace --config-env --attr-source \
         --super-prefix",
    flags: "--no-pager -P -p --paginate --bare --no-replace-objects \
         --literal-pathspecs --glob-pathspecs --noglob-pathspecs \
         --icase-pathspecs --no-optional-locks --no-lazy-fetch --no-advice \
         --exec-path --html-path --man-path --info-path --version -v --help -h",
    // git's builtins and the scripts its own package installs: git runs
    // these before looking for an alias of the same name, so no alias can
    // stand behind them. Any other name may be an alias (`git config
    // alias.ci commit`), which git looks up after PATH.
    commands: Some(
        "add am annotate apply archive bisect blame branch bugreport bundle \
         cat-file check-attr check-ignore check-mailmap check-ref-format \
         checkout checkout--worker checkout-index cherry cherry-pick clean \
         clone column commit commit-graph commit-tree config count-objects \
         credential credential-cache credential-store daemon describe diagnose \
         diff diff-files diff-index diff-tree difftool fast-export fast-import \
         fetch fetch-pack filter-branch fmt-merge-msg for-each-ref \
         for-each-repo format-patch fsck fsck-objects gc get-tar-commit-id grep \
         hash-object help hook index-pack init init-db instaweb \
         interpret-trailers log ls-files ls-remote ls-tree mailinfo mailsplit \
         maintenance merge merge-base merge-file merge-index merge-octopus \
         merge-one-file merge-ours merge-recursive merge-resolve merge-subtree \
         merge-tree mergetool mktag mktree multi-pack-index mv name-rev notes \
         pack-objects pack-redundant pack-refs patch-id prune prune-packed pull \
         push quiltimport range-diff read-tree rebase receive-pack reflog refs \
         remote repack replace replay request-pull rerere reset restore \
         rev-list rev-parse revert rm send-pack shortlog show show-branch \
         show-index show-ref sparse-checkout stage stash status stripspace \
         submodule switch symbolic-ref tag unpack-file unpack-objects \
         update-index update-ref update-server-info upload-archive upload-pack \
         var verify-commit verify-pack verify-tag version whatchanged worktree \
         write-tree",
    ),
    aliases: "",
    toolchain: false,
};

const NPM: Tool = Tool {
    name: "npm",
    valued: "--prefix -C --workspace -w --registry --userconfig --globalconfig \
         --cache --loglevel --location --tag --otp --scope --before --include \
         --omit --install-strategy --script-shell --node-options --auth-type \
         --access",
    flags: "-g --global -D --save-dev -S --save --no-save -E --save-exact -O \
         --save-optional -P --save-prod -B --save-bundle -y --yes -f --force -s \
         --silent -q --quiet -d -dd -ddd -l --long -ws --workspaces \
         --include-workspace-root --json --dry-run --ignore-scripts --offline \
         --prefer-offline --prefer-online --legacy-peer-deps --production \
         --foreground-scripts --no-audit --no-fund --no-progress --version -v \
         --help -h",
    // npm also takes any unique prefix of a command name (`npm publ`).
    commands: Some(
        "access adduser audit bugs cache ci completion config dedupe deprecate \
         diff dist-tag docs doctor edit exec explain explore find-dupes fund \
         get help help-search hook init install install-ci-test install-test \
         link ll login logout ls org outdated owner pack ping pkg prefix \
         profile prune publish query rebuild repo restart root run-script sbom \
         search set shrinkwrap star stars start stop team test token uninstall \
         unpublish unstar update version view whoami",
    ),
    aliases: "i=install in=install ins=install inst=install add=install \
         isntall=install it=install-test cit=install-ci-test ic=ci \
         clean-install=ci un=uninstall unlink=uninstall remove=uninstall \
         rm=uninstall r=uninstall t=test tst=test run=run-script rum=run-script \
         urn=run-script x=exec c=config ln=link list=ls la=ls up=update \
         upgrade=update v=view info=view show=view create=init why=explain \
         add-user=adduser rb=rebuild",
    toolchain: false,
};

const PNPM: Tool = Tool {
    name: "pnpm",
    valued: "-C --dir --filter -F --reporter --loglevel --workspace-concurrency \
         --prefix",
    flags: "-w --workspace-root -r --recursive --stream --parallel -s --silent \
         --aggregate-output --color --no-color --version -v --help -h",
    // Any other name runs the package's script of that name.
    commands: Some(
        "add audit bin config create dedupe deploy dlx doctor env exec fetch \
         import init install install-test licenses link list outdated pack \
         patch patch-commit patch-remove prune publish rebuild remove root run \
         server setup start store test unlink update why",
    ),
    aliases: "i=install it=install-test rm=remove un=remove uninstall=remove \
         up=update upgrade=update ls=list t=test run-script=run ln=link \
         rb=rebuild",
    toolchain: false,
};

const YARN: Tool = Tool {
    name: "yarn",
    valued: "--cwd --modules-folder --cache-folder --global-folder --link-folder \
         --preferred-cache-folder --registry --mutex --network-timeout \
         --use-yarnrc --otp",
    flags: "--verbose --offline --prefer-offline --frozen-lockfile --pure-lockfile \
         --immutable -s --silent --json --non-interactive --no-progress \
         --no-default-rc --ignore-engines --ignore-scripts --production \
         --version -v --help -h",
    // Any other name runs the package's script of that name.
    commands: Some(
        "add audit autoclean bin cache check config constraints create dedupe \
         dlx exec explain generate-lock-entry global help import info init \
         install licenses link list login logout node npm outdated owner pack \
         plugin policies publish rebuild remove run set tag team test unlink \
         unplug up upgrade upgrade-interactive version versions why workspace \
         workspaces",
    ),
    aliases: "",
    toolchain: false,
};

const CARGO: Tool = Tool {
    name: "cargo",
    valued: "--color -C --config -Z --explain",
    flags: "-v -vv --verbose -q --quiet --locked --offline --frozen --list -V \
         --version -h --help",
    // Cargo's own commands; an alias (`[alias]` in any `.cargo/config.toml`
    // up the tree, or `--config alias.x=…`) may take any other name,
    // including that of an installed `cargo-*` plugin.
    commands: Some(
        "add bench build check clean config doc fetch fix generate-lockfile \
         git-checkout help info init install locate-project login logout \
         metadata new owner package pkgid publish read-manifest remove report \
         run rustc rustdoc search test tree uninstall update vendor \
         verify-project version yank",
    ),
    aliases: "b=build c=check d=doc r=run t=test rm=remove",
    toolchain: true,
};

const DOCKER: Tool = Tool {
    name: "docker",
    valued: "--config -c --context -H --host -l --log-level --tlscacert --tlscert \
         --tlskey",
    flags: "-D --debug --tls --tlsverify -v --version -h --help",
    // Other names are CLI plugins (`docker compose`), found in folders
    // the config names.
    commands: Some(DOCKER_COMMANDS),
    aliases: "",
    toolchain: false,
};

const DOCKER_COMMANDS: &str = "attach build builder checkpoint commit config container context cp \
         create diff events exec export history image images import info \
         inspect kill load login logout logs manifest network node pause plugin \
         port ps pull push rename restart rm rmi run save search secret service \
         stack start stats stop swarm system tag top trust unpause update \
         version volume wait";

const PODMAN: Tool = Tool {
    name: "podman",
    valued: "--connection -c --url --identity --root --runroot --storage-driver \
         --storage-opt --cgroup-manager --log-level --module --conmon \
         --events-backend --hooks-dir --imagestore --network-cmd-path \
         --network-config-dir --out --registries-conf --runtime --runtime-flag \
         --ssh --tmpdir --volumepath --config",
    flags: "-r --remote --syslog --noout --debug -v --version -h --help",
    commands: None,
    aliases: "",
    toolchain: false,
};

const KUBECTL: Tool = Tool {
    name: "kubectl",
    valued: "-n --namespace --context --kubeconfig --kuberc --cluster --user -s \
         --server --token --as --as-group --as-uid --cache-dir \
         --certificate-authority --client-certificate --client-key --password \
         --username --profile --profile-output --request-timeout \
         --tls-server-name -v --v --vmodule --log-flush-frequency",
    flags: "--insecure-skip-tls-verify --match-server-version --warnings-as-errors \
         --disable-compression -h --help",
    // Other names are plugins (`kubectl-NAME` on PATH) or kuberc aliases.
    commands: Some(
        "annotate api-resources api-versions apply attach auth autoscale \
         certificate cluster-info completion config cordon cp create debug \
         delete describe diff drain edit events exec explain expose get help \
         kustomize label logs options patch plugin port-forward proxy replace \
         rollout run scale set taint top uncordon version wait",
    ),
    aliases: "",
    toolchain: false,
};

/// Is `word` one of the blank-separated words of `list`?
fn listed(list: &str, word: &str) -> bool {
    list.split_ascii_whitespace().any(|w| w == word)
}

const TOOLS: &[&Tool] = &[&GIT, &NPM, &PNPM, &YARN, &CARGO, &DOCKER, &PODMAN, &KUBECTL];

/// `docker container ls` is `docker ps`, `docker image rm` is `docker rmi`.
const DOCKER_GROUPS: &[(&str, &str, &str)] = &[
    ("container", "ls", "ps"),
    ("container", "list", "ps"),
    ("image", "ls", "images"),
    ("image", "list", "images"),
    ("image", "rm", "rmi"),
    ("image", "remove", "rmi"),
];

/// What a command of one of the tools is, for rules: `[tool,
/// subcommand, rest…]` as written after the global options and, when it
/// has another name for the tool (an alias, a docker group's verb), under
/// that name too; `[tool, hole]` when the subcommand cannot be known.
/// Nothing for other programs, or a command written that way already.
pub(crate) fn subcommand_forms(argv: &[Arg], out: &mut Vec<Vec<Arg>>) {
    let Some(program) = argv.first().and_then(Arg::lit) else {
        return;
    };
    let base = program.rsplit('/').next().unwrap_or(program);
    // `git-commit`, `docker-compose`, `cargo-clippy`, `kubectl-foo`: the
    // dashed program is the subcommand.
    if let Some((tool, sub)) = base.split_once('-')
        && matches!(tool, "git" | "docker" | "cargo" | "kubectl")
        && !sub.is_empty()
    {
        let mut form = vec![Arg::Lit(tool.into()), Arg::Lit(sub.into())];
        form.extend_from_slice(&argv[1..]);
        out.push(form);
        return;
    }
    let Some(tool) = TOOLS.iter().find(|t| t.name == base) else {
        return;
    };
    let args = &argv[1..];
    let mut i = 0;
    if tool.toolchain
        && args
            .first()
            .and_then(Arg::lit)
            .is_some_and(|a| a.starts_with('+'))
    {
        i = 1;
    }
    // The first operand after the global options.
    loop {
        let Some(a) = args.get(i) else {
            return;
        };
        let Some(s) = a.lit() else {
            // A value computed at run time where an option could stand.
            if a.may_be_flag() {
                out.push(hole(tool));
            } else {
                found(tool, argv, i, out);
            }
            return;
        };
        if s == "--" {
            out.push(hole(tool));
            return;
        }
        if !s.starts_with('-') || s == "-" {
            found(tool, argv, i, out);
            return;
        }
        match global(tool, s, args.get(i + 1)) {
            Global::Flag => i += 1,
            Global::Valued => i += 2,
            Global::Unknown => {
                out.push(hole(tool));
                return;
            }
        }
    }
}

/// `[tool, …]`: any subcommand.
fn hole(tool: &Tool) -> Vec<Arg> {
    vec![
        Arg::Lit(tool.name.into()),
        Arg::Opaque {
            prefix: String::new(),
        },
    ]
}

/// The forms for the subcommand at `args[at]` (`argv[at + 1]`).
fn found(tool: &Tool, argv: &[Arg], at: usize, out: &mut Vec<Vec<Arg>>) {
    let args = &argv[1..];
    let Some(sub) = args.get(at).and_then(Arg::lit) else {
        out.push(hole(tool));
        return;
    };
    let canonical = tool
        .aliases
        .split_ascii_whitespace()
        .filter_map(|p| p.split_once('='))
        .find(|(a, _)| *a == sub)
        .map_or(sub, |(_, c)| c);
    if tool.commands.is_some_and(|known| !listed(known, canonical)) {
        out.push(hole(tool));
        return;
    }
    let rest = &args[at + 1..];
    let form = |sub: &str, rest: &[Arg]| {
        let mut f = vec![Arg::Lit(tool.name.into()), Arg::Lit(sub.into())];
        f.extend_from_slice(rest);
        f
    };
    let written = form(sub, rest);
    // Nothing to add when it is how the command is written.
    if written.as_slice() != argv {
        out.push(written);
    }
    if canonical != sub {
        out.push(form(canonical, rest));
    }
    if tool.name == "docker"
        && matches!(sub, "container" | "image")
        && let Some(verb) = rest.first().and_then(Arg::lit)
    {
        // A management group's verb is the top-level command.
        let top = DOCKER_GROUPS
            .iter()
            .find(|(g, v, _)| *g == sub && *v == verb)
            .map(|(_, _, t)| *t)
            .or_else(|| listed(DOCKER_COMMANDS, verb).then_some(verb));
        if let Some(top) = top {
            out.push(form(top, &rest[1..]));
        }
    }
}

enum Global {
    Flag,
    /// Takes the next word.
    Valued,
    Unknown,
}

fn global(tool: &Tool, s: &str, next: Option<&Arg>) -> Global {
    if let Some((name, value)) = s.split_once('=')
        && name.starts_with("--")
    {
        let known = listed(tool.valued, name) || listed(tool.flags, name);
        return if known && !shadowing(tool, name, Some(value)) {
            Global::Flag
        } else {
            Global::Unknown
        };
    }
    if listed(tool.flags, s) {
        return Global::Flag;
    }
    if listed(tool.valued, s) {
        return match next {
            // No value (the tool stops there), or any number of words.
            None | Some(Arg::Many { .. }) => Global::Unknown,
            Some(v) if shadowing(tool, s, v.lit()) => Global::Unknown,
            Some(_) => Global::Valued,
        };
    }
    // `-Cdir`, `-Zflag`, `-nkube-system`: a short valued option with its
    // value joined (git reads only `-C DIR`, and says so otherwise).
    if tool.name != "git"
        && !s.starts_with("--")
        && s.len() > 2
        && let Some(short) = s.get(..2)
        && listed(tool.valued, short)
    {
        return if shadowing(tool, short, s.get(2..)) {
            Global::Unknown
        } else {
            Global::Flag
        };
    }
    Global::Unknown
}

/// Options whose value can make a subcommand's name mean something else:
/// a git or cargo alias set on the command line (or a cargo config file,
/// which may hold aliases); a value computed at run time could be either.
fn shadowing(tool: &Tool, opt: &str, value: Option<&str>) -> bool {
    match (tool.name, opt) {
        ("git", "-c" | "--config-env") => value.is_none_or(|v| {
            v.split_once('.')
                .is_none_or(|(section, _)| section.eq_ignore_ascii_case("alias"))
        }),
        ("cargo", "--config") => value.is_none_or(|v| {
            // `KEY=VALUE`, or a file of settings.
            v.split_once('=').is_none_or(|(key, _)| {
                key.trim()
                    .trim_start_matches('\'')
                    .trim_start_matches('"')
                    .starts_with("alias")
            })
        }),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(s: &str) -> Vec<Arg> {
        s.split(' ')
            .map(|w| {
                if w == "?" {
                    Arg::Opaque {
                        prefix: String::new(),
                    }
                } else {
                    Arg::Lit(w.into())
                }
            })
            .collect()
    }

    /// The forms, joined by ` | `; `-` for none.
    fn form(s: &str) -> String {
        let mut out = Vec::new();
        subcommand_forms(&argv(s), &mut out);
        if out.is_empty() {
            return "-".into();
        }
        out.iter()
            .map(|f| f.iter().map(Arg::show).collect::<Vec<_>>().join(" "))
            .collect::<Vec<_>>()
            .join(" | ")
    }

    #[test]
    fn git_global_options_come_off() {
        assert_eq!(form("git -C . commit -m x"), "git commit -m x");
        assert_eq!(form("git --no-pager -P commit"), "git commit");
        assert_eq!(
            form("git --git-dir=.git --work-tree . commit"),
            "git commit"
        );
        assert_eq!(form("git -c user.name=a -c core.x=y commit"), "git commit");
        assert_eq!(
            form("git --namespace x --literal-pathspecs push"),
            "git push"
        );
        assert_eq!(form("/usr/bin/git -C ? commit"), "git commit");
        assert_eq!(form("/usr/lib/git-core/git-commit -m x"), "git commit -m x");
        // Written as it is: nothing to add.
        assert_eq!(form("git commit"), "-");
        assert_eq!(form("git -C ."), "-");
    }

    /// An alias, an unknown option or a value computed at run time where
    /// an option could stand: the subcommand is not known.
    #[test]
    fn git_subcommands_that_cannot_be_known_leave_a_hole() {
        assert_eq!(form("git -c alias.ci=commit ci"), "git …");
        assert_eq!(form("git -c Alias.ci=commit ci"), "git …");
        assert_eq!(form("git --config-env=alias.ci=X ci"), "git …");
        assert_eq!(form("git -c ? ci"), "git …");
        assert_eq!(form("git ci -m x"), "git …");
        assert_eq!(form("git --frobnicate commit"), "git …");
        assert_eq!(form("git ? commit"), "git …");
        assert_eq!(form("git -- commit"), "git …");
        assert_eq!(form("git -C"), "git …");
    }

    #[test]
    fn npm_pnpm_yarn() {
        assert_eq!(form("npm --prefix . publish"), "npm publish");
        assert_eq!(form("npm -C sub -g publish --tag x"), "npm publish --tag x");
        assert_eq!(
            form("npm -w pkg run build"),
            "npm run build | npm run-script build"
        );
        assert_eq!(form("npm i lodash"), "npm install lodash");
        assert_eq!(form("npm --prefix=. i"), "npm i | npm install");
        assert_eq!(form("npm publ"), "npm …");
        assert_eq!(form("npm --made-up x publish"), "npm …");
        assert_eq!(form("pnpm -C web --filter app publish"), "pnpm publish");
        assert_eq!(form("pnpm -r deploy-it"), "pnpm …");
        assert_eq!(form("yarn --cwd web publish"), "yarn publish");
        assert_eq!(form("yarn deploy"), "yarn …");
    }

    #[test]
    fn cargo() {
        assert_eq!(form("cargo +nightly publish"), "cargo publish");
        assert_eq!(
            form("cargo -Zunstable-options -C sub publish"),
            "cargo publish"
        );
        assert_eq!(
            form("cargo --config net.offline=true -q publish"),
            "cargo publish"
        );
        assert_eq!(form("cargo --config alias.p=publish p"), "cargo …");
        assert_eq!(form("cargo --config cfg.toml p"), "cargo …");
        assert_eq!(form("cargo t"), "cargo test");
        assert_eq!(form("cargo -q b"), "cargo b | cargo build");
        assert_eq!(form("cargo nextest run"), "cargo …");
        assert_eq!(form("cargo-clippy --fix"), "cargo clippy --fix");
    }

    #[test]
    fn docker_podman_kubectl() {
        assert_eq!(form("docker --context prod rm x"), "docker rm x");
        assert_eq!(
            form("docker -H tcp://h:1 container rm x"),
            "docker container rm x | docker rm x"
        );
        assert_eq!(form("docker container ls"), "docker ps");
        assert_eq!(form("docker image rm x"), "docker rmi x");
        assert_eq!(form("docker --config=/tmp/c compose up"), "docker …");
        assert_eq!(form("podman --remote --url x rm y"), "podman rm y");
        assert_eq!(
            form("kubectl -n prod --context c delete pod x"),
            "kubectl delete pod x"
        );
        assert_eq!(
            form("kubectl --kubeconfig=k -nprod delete pod"),
            "kubectl delete pod"
        );
        assert_eq!(form("kubectl --frob x delete"), "kubectl …");
        assert_eq!(form("kubectl evil-plugin"), "kubectl …");
    }
}
