//! The read-only programs: each with exactly the options tern knows to be
//! harmless, which operands it reads, and the options it knows but refuses
//! (they write, run programs, follow links out of the tree or read paths
//! from a list the command line does not show). The option grammar is in
//! [`super::spec`]; the tests beside this table run both ways.
//!
//! Long-option lists (`longs`) come from each program's `--help` (GNU
//! coreutils 9.1, grep 3.8, diffutils 3.8 on Debian 12): with them an
//! abbreviation is allowed only when it names one option.
//!
//! Not here on purpose: interpreters and build tools (`python`, `node`,
//! `cargo`, `npm`, `make`, …), whose behaviour comes from files the model
//! can write; `less`/`more` (LESSOPEN, commands); `tee`, `sponge`, `dd`.

use super::spec::{NUMERIC, Operands, PERMUTE, Prog};

const G: u8 = PERMUTE;

pub(crate) static PROGRAMS: &[Prog] = &[
    Prog {
        names: &["ls", "dir", "vdir"],
        opts: "-a --all -A --almost-all --author -b --escape --block-size= -B --ignore-backups -c -C \
               --color?= -d --directory -D --dired -f -F --classify?= --file-type --format= \
               --full-time -g --group-directories-first -G --no-group -h --human-readable --si \
               -H --dereference-command-line --dereference-command-line-symlink-to-dir --hide= \
               --hyperlink?= --indicator-style= -i --inode -I= --ignore= -k --kibibytes -l \
               -L --dereference -m -n --numeric-uid-gid -N --literal -o -p -q --hide-control-chars \
               --show-control-chars -Q --quote-name --quoting-style= -r --reverse -R --recursive \
               -s --size -S --sort= --time= --time-style= -t -T= --tabsize= -u -U -v -w= --width= \
               -x -X -Z --context --zero -1",
        operands: Operands::PathsOrCwd,
        style: G,
        longs: "--all --almost-all --author --block-size --classify --color --context --dereference \
                --dereference-command-line --dereference-command-line-symlink-to-dir --directory \
                --dired --escape --file-type --format --full-time --group-directories-first --help \
                --hide --hide-control-chars --human-readable --hyperlink --ignore --ignore-backups \
                --indicator-style --inode --kibibytes --literal --no-group --numeric-uid-gid \
                --quote-name --quoting-style --recursive --reverse --show-control-chars --si --size \
                --sort --tabsize --time --time-style --version --width --zero",
        recursive: &[],
        max: None,
        pattern_opts: &[],
    },
    Prog {
        names: &["cat"],
        opts: "-A --show-all -b --number-nonblank -e -E --show-ends -n --number -s --squeeze-blank \
               -t -T --show-tabs -u -v --show-nonprinting",
        operands: Operands::Paths,
        style: G,
        longs: "--help --number --number-nonblank --show-all --show-ends --show-nonprinting \
                --show-tabs --squeeze-blank --version",
        recursive: &[],
        max: None,
        pattern_opts: &[],
    },
    Prog {
        names: &["head"],
        opts: "-c= --bytes= -n= --lines= -q --quiet --silent -v --verbose -z --zero-terminated",
        operands: Operands::Paths,
        style: G | NUMERIC,
        longs: "--bytes --help --lines --quiet --silent --verbose --version --zero-terminated",
        recursive: &[],
        max: None,
        pattern_opts: &[],
    },
    Prog {
        // -f/--follow never ends; --pid, --retry and -s only matter with it.
        names: &["tail"],
        opts: "-c= --bytes= -n= --lines= -q --quiet --silent -v --verbose -z --zero-terminated \
               !W-f !W--follow?= !W-F !W--retry !W--pid= !W-s= !W--sleep-interval= !W--max-unchanged-stats=",
        operands: Operands::Paths,
        style: G | NUMERIC,
        longs: "--bytes --follow --help --lines --max-unchanged-stats --pid --quiet --retry --silent \
                --sleep-interval --verbose --version --zero-terminated",
        recursive: &[],
        max: None,
        pattern_opts: &[],
    },
    Prog {
        // --files0-from reads the paths to open from a file.
        names: &["wc"],
        opts: "-c --bytes -m --chars -l --lines -L --max-line-length -w --words !P--files0-from=",
        operands: Operands::Paths,
        style: G,
        longs: "--bytes --chars --files0-from --help --lines --max-line-length --version --words",
        recursive: &[],
        max: None,
        pattern_opts: &[],
    },
    Prog {
        // -R follows every link under a directory; -r only those named.
        names: &["grep", "egrep", "fgrep"],
        opts: "-E --extended-regexp -F --fixed-strings -G --basic-regexp -P --perl-regexp \
               -e= --regexp= -f=r --file=r -i -y --ignore-case --no-ignore-case -w --word-regexp \
               -x --line-regexp -z --null-data -s --no-messages -v --invert-match -V --version \
               -m=n --max-count=n -b --byte-offset -n --line-number --line-buffered \
               -H --with-filename -h --no-filename --label= -o --only-matching -q --quiet \
               --silent --binary-files= -a --text -I -d= --directories= -D= --devices= \
               -r --recursive !L-R !L--dereference-recursive --include= --exclude= \
               --exclude-from=r --exclude-dir= -L --files-without-match -l --files-with-matches \
               -c --count -T --initial-tab -Z --null -B=n --before-context=n -A=n \
               --after-context=n -C=n --context=n --group-separator= --no-group-separator \
               --color?= --colour?= -U --binary",
        operands: Operands::PatternThenPaths,
        style: G | NUMERIC,
        longs: "--after-context --basic-regexp --before-context --binary --binary-files \
                --byte-offset --color --colour --context --count --dereference-recursive --devices \
                --directories --exclude --exclude-dir --exclude-from --extended-regexp --file \
                --files-with-matches --files-without-match --fixed-strings --group-separator --help \
                --ignore-case --include --initial-tab --invert-match --label --line-buffered \
                --line-number --line-regexp --max-count --no-filename --no-group-separator \
                --no-ignore-case --no-messages --null --null-data --only-matching --perl-regexp \
                --quiet --recursive --regexp --silent --text --version --with-filename \
                --word-regexp",
        recursive: &["-r", "--recursive", "-d", "--directories"],
        max: None,
        pattern_opts: &["-e", "--regexp", "-f", "--file"],
    },
    Prog {
        // ripgrep: --pre runs a program per file, -z runs decompressors,
        // -L follows links out of the tree. It has no abbreviations.
        names: &["rg"],
        opts: "-A=n --after-context=n -B=n --before-context=n -C=n --context=n -a --text \
               --binary --no-binary -b --byte-offset -c --count --count-matches --color= --colors= \
               --column --no-column --context-separator= --no-context-separator --crlf -e= \
               --regexp= -E= --encoding= -f=r --file=r --files -l --files-with-matches \
               --files-without-match -F --fixed-strings --no-fixed-strings -g= --glob= --iglob= \
               --glob-case-insensitive --heading --no-heading -. --hidden --no-hidden -i \
               --ignore-case --ignore-file=r --ignore-file-case-insensitive --include-zero \
               -v --invert-match --json --no-json --line-buffered --block-buffered -n \
               --line-number -N --no-line-number -x --line-regexp -M=n --max-columns=n \
               --max-columns-preview --max-count=n -m=n --max-depth=n -d=n --max-filesize= --mmap \
               --no-mmap -U --multiline --multiline-dotall --no-config --no-ignore \
               --no-ignore-dot --no-ignore-exclude --no-ignore-files --no-ignore-global \
               --no-ignore-parent --no-ignore-vcs --no-messages --no-require-git --no-unicode \
               --null -0 --null-data --one-file-system -o --only-matching --passthru \
               --path-separator= -P --pcre2 --no-pcre2 -p --pretty -q --quiet --regex-size-limit= \
               --dfa-size-limit= -r= --replace= -s --case-sensitive -S --smart-case --sort= \
               --sortr= --stats -t= --type= -T= --type-not= --type-add= --type-clear= --type-list \
               --trim -u --unrestricted --vimgrep -H --with-filename -I --no-filename -w \
               --word-regexp -j=n --threads=n --engine= --auto-hybrid-regex --field-match-separator= \
               --field-context-separator= --hyperlink-format= --debug --trace -h --help -V --version \
               !--pre= !--pre-glob= !-z !--search-zip !L-L !L--follow",
        operands: Operands::PatternThenPaths,
        style: G,
        longs: "",
        recursive: &["*"],
        max: None,
        pattern_opts: &["-e", "--regexp", "-f", "--file", "--files", "--type-list"],
    },
    Prog {
        // -o writes, --compress-program runs, -T writes temporaries where
        // it says, --files0-from reads a list of paths.
        names: &["sort"],
        opts: "-b --ignore-leading-blanks -d --dictionary-order -f --ignore-case -g \
               --general-numeric-sort -i --ignore-nonprinting -M --month-sort -h \
               --human-numeric-sort -n --numeric-sort -R --random-sort --random-source=r -r \
               --reverse --sort= -V --version-sort --batch-size=n -c --check?= -C \
               --debug -k= --key= -m --merge -s --stable -S= --buffer-size= -t= \
               --field-separator= --parallel=n -u --unique -z --zero-terminated \
               !-o= !--output= !--compress-program= !-T= !--temporary-directory= !P--files0-from=",
        operands: Operands::Paths,
        style: G,
        longs: "--batch-size --buffer-size --check --compress-program --debug --dictionary-order \
                --field-separator --files0-from --general-numeric-sort --help --human-numeric-sort \
                --ignore-case --ignore-leading-blanks --ignore-nonprinting --key --merge \
                --month-sort --numeric-sort --output --parallel --random-sort --random-source \
                --reverse --sort --stable --temporary-directory --unique --version --version-sort \
                --zero-terminated",
        recursive: &[],
        max: None,
        pattern_opts: &[],
    },
    Prog {
        // `uniq IN OUT` writes OUT.
        names: &["uniq"],
        opts: "-c --count -d --repeated -D --all-repeated?= -f=n --skip-fields=n --group?= -i \
               --ignore-case -s=n --skip-chars=n -u --unique -z --zero-terminated -w=n \
               --check-chars=n",
        operands: Operands::Paths,
        style: G,
        longs: "--all-repeated --check-chars --count --group --help --ignore-case --repeated \
                --skip-chars --skip-fields --unique --version --zero-terminated",
        recursive: &[],
        max: Some(1),
        pattern_opts: &[],
    },
    Prog {
        names: &["cut"],
        opts: "-b= --bytes= -c= --characters= -d= --delimiter= -f= --fields= -n --complement -s \
               --only-delimited --output-delimiter= -z --zero-terminated",
        operands: Operands::Paths,
        style: G,
        longs: "--bytes --characters --complement --delimiter --fields --help --only-delimited \
                --output-delimiter --version --zero-terminated",
        recursive: &[],
        max: None,
        pattern_opts: &[],
    },
    Prog {
        names: &["tr"],
        opts: "-c -C --complement -d --delete -s --squeeze-repeats -t --truncate-set1",
        operands: Operands::Text,
        style: G,
        longs: "--complement --delete --help --squeeze-repeats --truncate-set1 --version",
        recursive: &[],
        max: None,
        pattern_opts: &[],
    },
    Prog {
        names: &["nl"],
        opts: "-b= --body-numbering= -d= --section-delimiter= -f= --footer-numbering= -h= \
               --header-numbering= -i=n --line-increment=n -l=n --join-blank-lines=n -n= \
               --number-format= -p --no-renumber -s= --number-separator= -v=n \
               --starting-line-number=n -w=n --number-width=n",
        operands: Operands::Paths,
        style: G,
        longs: "--body-numbering --footer-numbering --header-numbering --help --join-blank-lines \
                --line-increment --no-renumber --number-format --number-separator --number-width \
                --section-delimiter --starting-line-number --version",
        recursive: &[],
        max: None,
        pattern_opts: &[],
    },
    Prog {
        names: &["od"],
        opts: "-A= --address-radix= --endian= -j= --skip-bytes= -N= --read-bytes= -S= --strings?= \
               -t= --format= -v --output-duplicates -w?= --width?= --traditional -a -b -c -d -f \
               -i -l -o -s -x",
        operands: Operands::Paths,
        style: G,
        longs: "--address-radix --endian --format --help --output-duplicates --read-bytes \
                --skip-bytes --strings --traditional --version --width",
        recursive: &[],
        max: None,
        pattern_opts: &[],
    },
    Prog {
        // `xxd IN OUT` writes OUT.
        names: &["xxd"],
        opts: "-a -autoskip -b -bits -C -capitalize -c=n -cols=n -E -EBCDIC -e -g=n -groupsize=n \
               -h -help -i -include -l=n -len=n -n= -name= -o= -offset= -p -ps -postscript -plain \
               -r -revert -d -s= -seek= -u -v -version",
        operands: Operands::Paths,
        style: 0,
        longs: "",
        recursive: &[],
        max: Some(1),
        pattern_opts: &[],
    },
    Prog {
        names: &["hexdump", "hd"],
        opts: "-b -c -C -d -o -x -e= -f=r -n=n -s= -v -L?=",
        operands: Operands::Paths,
        style: 0,
        longs: "",
        recursive: &[],
        max: None,
        pattern_opts: &[],
    },
    Prog {
        names: &["strings"],
        opts: "-a --all -d --data -f --print-file-name -n=n --bytes=n -t= --radix= -o -e= \
               --encoding= -w --include-all-whitespace -s= --output-separator= --unicode= -U=",
        operands: Operands::Paths,
        style: G | NUMERIC,
        longs: "",
        recursive: &[],
        max: None,
        pattern_opts: &[],
    },
    Prog {
        // -C writes a compiled magic file; -f reads names from a list; -z
        // and -Z run decompressors (zstd, lzip …) found on PATH.
        names: &["file"],
        opts: "-b --brief -c --checking-printout -e= --exclude= --exclude-quiet= -F= \
               --separator= -i --mime --apple --extension --mime-type --mime-encoding -k \
               --keep-going -l --list -L --dereference -h --no-dereference -n --no-buffer -N \
               --no-pad -0 --print0 -p --preserve-date -P= --parameter= -r --raw -s \
               --special-files -m=r --magic-file=r -d --debug -v --version !-C !--compile !P-f= \
               !P--files-from= !-S !--no-sandbox !-z !--uncompress !-Z !--uncompress-noreport",
        operands: Operands::Paths,
        style: G,
        longs: "--apple --brief --checking-printout --compile --debug --dereference --exclude \
                --exclude-quiet --extension --files-from --help --keep-going --list --magic-file \
                --mime --mime-encoding --mime-type --no-buffer --no-dereference --no-pad \
                --no-sandbox --parameter --preserve-date --print0 --raw --separator \
                --special-files --uncompress --uncompress-noreport --version",
        recursive: &[],
        max: None,
        pattern_opts: &[],
    },
    Prog {
        names: &["stat"],
        opts: "-L --dereference -f --file-system --cached= -c= --format= --printf= -t --terse",
        operands: Operands::Paths,
        style: G,
        longs: "--cached --dereference --file-system --format --help --printf --terse --version",
        recursive: &[],
        max: None,
        pattern_opts: &[],
    },
    Prog {
        // -L follows every link under the tree; --files0-from reads a list.
        names: &["du"],
        opts: "-0 --null -a --all --apparent-size -B= --block-size= -b --bytes -c --total -D \
               --dereference-args -d=n --max-depth=n -H -h --human-readable --inodes -k -l \
               --count-links -m -P --no-dereference -S --separate-dirs --si -s --summarize -t= \
               --threshold= --time?= --time-style= -X=r --exclude-from=r --exclude= -x \
               --one-file-system !L-L !L--dereference !P--files0-from=",
        operands: Operands::PathsOrCwd,
        style: G,
        longs: "--all --apparent-size --block-size --bytes --count-links --dereference \
                --dereference-args --exclude --exclude-from --files0-from --help --human-readable \
                --inodes --max-depth --no-dereference --null --one-file-system --separate-dirs \
                --si --summarize --threshold --time --time-style --total --version",
        recursive: &[],
        max: None,
        pattern_opts: &[],
    },
    Prog {
        names: &["df"],
        opts: "-a --all -B= --block-size= -h --human-readable -H --si -i --inodes -k -l --local \
               --no-sync --output?= -P --portability --sync --total -t= --type= -T --print-type \
               -x= --exclude-type= -v",
        operands: Operands::Paths,
        style: G,
        longs: "--all --block-size --exclude-type --help --human-readable --inodes --local \
                --no-sync --output --portability --print-type --si --sync --total --type --version",
        recursive: &[],
        max: None,
        pattern_opts: &[],
    },
    Prog {
        // -l follows links like directories; -o writes; --fromfile reads a
        // list; -R runs tree again in each folder with `-o 00Tree.html`.
        names: &["tree"],
        opts: "-a -d -f -x -L=n !-R -P= -I= --gitignore --ignore-case --matchdirs --metafirst \
               --prune --info --noreport --charset= --filelimit=n -q -N -Q -p -u -g -s -h --si \
               --du -D --timefmt= -F --inodes --device -v -t -c -U -r --dirsfirst --filesfirst \
               --sort= -i -A -S -n -C -X -J -H= -T= --nolinks --version --help \
               !L-l !-o= !--fromfile !--fflinks !--gitfile= !--infofile= !--hintro= !--houtro=",
        operands: Operands::PathsOrCwd,
        style: 0,
        longs: "",
        recursive: &[],
        max: None,
        pattern_opts: &[],
    },
    Prog {
        names: &["realpath"],
        opts: "-e --canonicalize-existing -m --canonicalize-missing -L --logical -P --physical \
               -q --quiet --relative-to=r --relative-base=r -s --strip --no-symlinks -z --zero",
        operands: Operands::Paths,
        style: G,
        longs: "--canonicalize-existing --canonicalize-missing --help --logical --no-symlinks \
                --physical --quiet --relative-base --relative-to --strip --version --zero",
        recursive: &[],
        max: None,
        pattern_opts: &[],
    },
    Prog {
        names: &["readlink"],
        opts: "-f --canonicalize -e --canonicalize-existing -m --canonicalize-missing -n \
               --no-newline -q --quiet -s --silent -v --verbose -z --zero",
        operands: Operands::Paths,
        style: G,
        longs: "--canonicalize --canonicalize-existing --canonicalize-missing --help --no-newline \
                --quiet --silent --verbose --version --zero",
        recursive: &[],
        max: None,
        pattern_opts: &[],
    },
    Prog {
        // Pure string operations: nothing is opened.
        names: &["basename"],
        opts: "-a --multiple -s= --suffix= -z --zero",
        operands: Operands::Text,
        style: G,
        longs: "--help --multiple --suffix --version --zero",
        recursive: &[],
        max: None,
        pattern_opts: &[],
    },
    Prog {
        names: &["dirname"],
        opts: "-z --zero",
        operands: Operands::Text,
        style: G,
        longs: "--help --version --zero",
        recursive: &[],
        max: None,
        pattern_opts: &[],
    },
    Prog {
        // -l pipes through `pr`; --from-file/--to-file are read.
        names: &["diff"],
        opts: "--normal -q --brief -s --report-identical-files -c -C=n --context?=n -u -U=n \
               --unified?=n -e --ed -n --rcs -y --side-by-side -W=n --width=n --left-column \
               --suppress-common-lines -p --show-c-function -F= --show-function-line= --label= \
               -t --expand-tabs -T --initial-tab --tabsize=n --suppress-blank-empty -r \
               --recursive --no-dereference -N --new-file --unidirectional-new-file \
               --ignore-file-name-case --no-ignore-file-name-case -x= --exclude= -X=r \
               --exclude-from=r -S= --starting-file= --from-file=r --to-file=r -i --ignore-case \
               -E --ignore-tab-expansion -Z --ignore-trailing-space -b --ignore-space-change -w \
               --ignore-all-space -B --ignore-blank-lines -I= --ignore-matching-lines= -a --text \
               --strip-trailing-cr -D= --ifdef= --GTYPE-group-format= --line-format= \
               --LTYPE-line-format= -d --minimal --horizon-lines=n --speed-large-files --color?= \
               --palette= -v --version !-l !--paginate",
        operands: Operands::Paths,
        style: G,
        longs: "--GTYPE-group-format --LTYPE-line-format --brief --color --context --ed --exclude \
                --exclude-from --expand-tabs --from-file --help --horizon-lines --ifdef \
                --ignore-all-space --ignore-blank-lines --ignore-case --ignore-file-name-case \
                --ignore-matching-lines --ignore-space-change --ignore-tab-expansion \
                --ignore-trailing-space --initial-tab --label --left-column --line-format \
                --minimal --new-file --no-dereference --no-ignore-file-name-case --normal \
                --paginate --palette --rcs --recursive --report-identical-files --show-c-function \
                --show-function-line --side-by-side --speed-large-files --starting-file \
                --strip-trailing-cr --suppress-blank-empty --suppress-common-lines --tabsize \
                --text --to-file --unidirectional-new-file --unified --version --width",
        recursive: &["-r", "--recursive"],
        max: None,
        pattern_opts: &[],
    },
    Prog {
        names: &["cmp"],
        opts: "-b --print-bytes -i= --ignore-initial= -l --verbose -n= --bytes= -s --quiet \
               --silent -v --version",
        operands: Operands::Paths,
        style: G,
        longs: "--bytes --help --ignore-initial --print-bytes --quiet --silent --verbose --version",
        recursive: &[],
        max: Some(2),
        pattern_opts: &[],
    },
    Prog {
        names: &["comm"],
        opts: "-1 -2 -3 --check-order --nocheck-order --output-delimiter= --total -z \
               --zero-terminated",
        operands: Operands::Paths,
        style: G,
        longs: "--check-order --help --nocheck-order --output-delimiter --total --version \
                --zero-terminated",
        recursive: &[],
        max: Some(2),
        pattern_opts: &[],
    },
    Prog {
        names: &["paste"],
        opts: "-d= --delimiters= -s --serial -z --zero-terminated",
        operands: Operands::Paths,
        style: G,
        longs: "--delimiters --help --serial --version --zero-terminated",
        recursive: &[],
        max: None,
        pattern_opts: &[],
    },
    Prog {
        names: &["join"],
        opts: "-a= -e= -i --ignore-case -j= -o= -t= -v= -1= -2= --check-order --nocheck-order \
               --header -z --zero-terminated",
        operands: Operands::Paths,
        style: G,
        longs: "--check-order --header --help --ignore-case --nocheck-order --version \
                --zero-terminated",
        recursive: &[],
        max: Some(2),
        pattern_opts: &[],
    },
    Prog {
        names: &["fold"],
        opts: "-b --bytes -s --spaces -w=n --width=n",
        operands: Operands::Paths,
        style: G,
        longs: "--bytes --help --spaces --version --width",
        recursive: &[],
        max: None,
        pattern_opts: &[],
    },
    Prog {
        names: &["expand", "unexpand"],
        opts: "-i --initial -t= --tabs= -a --all --first-only",
        operands: Operands::Paths,
        style: G | NUMERIC,
        longs: "--all --first-only --help --initial --tabs --version",
        recursive: &[],
        max: None,
        pattern_opts: &[],
    },
    Prog {
        names: &["tac"],
        opts: "-b --before -r --regex -s= --separator=",
        operands: Operands::Paths,
        style: G,
        longs: "--before --help --regex --separator --version",
        recursive: &[],
        max: None,
        pattern_opts: &[],
    },
    Prog {
        names: &["rev"],
        opts: "-0 --zero -h --help -V --version",
        operands: Operands::Paths,
        style: G,
        longs: "",
        recursive: &[],
        max: None,
        pattern_opts: &[],
    },
    Prog {
        names: &["column"],
        opts: "-t --table -s= --separator= -o= --output-separator= -c=n --output-width=n -x \
               --fillrows -n= --table-name= -N= --table-columns= -R= --table-right= -H= \
               --table-hide= -J --json -L --keep-empty-lines -l=n --table-columns-limit=n",
        operands: Operands::Paths,
        style: G,
        longs: "",
        recursive: &[],
        max: None,
        pattern_opts: &[],
    },
    Prog {
        // --check reads a list of paths from the file and opens them.
        names: &[
            "md5sum",
            "sha1sum",
            "sha224sum",
            "sha256sum",
            "sha384sum",
            "sha512sum",
            "b2sum",
        ],
        opts: "-b --binary -t --text --tag -z --zero !P-c !P--check --ignore-missing --quiet \
               --status --strict -w --warn -l=n --length=n",
        operands: Operands::Paths,
        style: G,
        longs: "--binary --check --help --ignore-missing --quiet --status --strict --tag --text \
                --version --warn --zero --length",
        recursive: &[],
        max: None,
        pattern_opts: &[],
    },
    Prog {
        names: &["cksum", "sum"],
        opts: "-a= --algorithm= --base64 -l=n --length=n --raw --tag --untagged -z --zero -r -s \
               --sysv",
        operands: Operands::Paths,
        style: G,
        longs: "",
        recursive: &[],
        max: None,
        pattern_opts: &[],
    },
    Prog {
        names: &["base64", "base32"],
        opts: "-d --decode -i --ignore-garbage -w=n --wrap=n",
        operands: Operands::Paths,
        style: G,
        longs: "--decode --help --ignore-garbage --version --wrap",
        recursive: &[],
        max: Some(1),
        pattern_opts: &[],
    },
    Prog {
        names: &["seq"],
        opts: "-f= --format= -s= --separator= -w --equal-width",
        operands: Operands::Text,
        style: 0,
        longs: "--equal-width --format --help --separator --version",
        recursive: &[],
        max: Some(3),
        pattern_opts: &[],
    },
    Prog {
        names: &["uname", "arch"],
        opts: "-a --all -s --kernel-name -n --nodename -r --kernel-release -v --kernel-version \
               -m --machine -p --processor -i --hardware-platform -o --operating-system",
        operands: Operands::None,
        style: G,
        longs: "--all --hardware-platform --help --kernel-name --kernel-release --kernel-version \
                --machine --nodename --operating-system --processor --version",
        recursive: &[],
        max: None,
        pattern_opts: &[],
    },
    Prog {
        names: &["id"],
        opts: "-a -Z --context -g --group -G --groups -n --name -r --real -u --user -z --zero",
        operands: Operands::Text,
        style: G,
        longs: "--context --group --groups --help --name --real --user --version --zero",
        recursive: &[],
        max: None,
        pattern_opts: &[],
    },
    Prog {
        names: &[
            "whoami", "groups", "logname", "tty", "nproc", "uptime", "printenv", "locale",
        ],
        opts: "--all --ignore=n -0 --null -s --silent --quiet -a -m -p --pretty --since",
        operands: Operands::Text,
        style: G,
        longs: "",
        recursive: &[],
        max: None,
        pattern_opts: &[],
    },
    Prog {
        // An operand sets the host name; -F reads a file to set it.
        names: &["hostname"],
        opts: "-a --alias -A --all-fqdns -d --domain -f --fqdn --long -i --ip-address -I \
               --all-ip-addresses -s --short -y --yp --nis !S-F= !S--file= !S-b !S--boot",
        operands: Operands::None,
        style: G,
        longs: "",
        recursive: &[],
        max: None,
        pattern_opts: &[],
    },
    Prog {
        // -s sets the clock; an operand without `+` sets it too (checked in
        // `programs::extra`).
        names: &["date"],
        opts: "-d= --date= -f=r --file=r -I?= --iso-8601?= -R --rfc-email --rfc-3339= -r=r \
               --reference=r -u --utc --universal --debug --resolution !S-s= !S--set=",
        operands: Operands::Text,
        style: G,
        longs: "--date --debug --file --help --iso-8601 --reference --resolution --rfc-3339 \
                --rfc-email --set --universal --utc --version",
        recursive: &[],
        max: Some(1),
        pattern_opts: &[],
    },
    Prog {
        // -s repeats forever; the rest print memory use once.
        names: &["free"],
        opts: "-b --bytes -k --kibi -m --mebi -g --gibi --tebi --pebi --kilo --mega --giga --tera \
               --peta -h --human --si -l --lohi -t --total -v --committed -w --wide --help -V \
               --version !W-s= !W--seconds= !W-c= !W--count=",
        operands: Operands::None,
        style: G,
        longs: "",
        recursive: &[],
        max: None,
        pattern_opts: &[],
    },
    Prog {
        names: &["lscpu"],
        opts: "-a --all -b --online -c --offline -e?= --extended?= -p?= --parse?= -J --json -x \
               --hex -y --physical -B --bytes -h --help -V --version",
        operands: Operands::None,
        style: G,
        longs: "",
        recursive: &[],
        max: None,
        pattern_opts: &[],
    },
    Prog {
        names: &["getconf"],
        opts: "-a",
        operands: Operands::Text,
        style: 0,
        longs: "",
        recursive: &[],
        max: Some(2),
        pattern_opts: &[],
    },
    Prog {
        names: &["which"],
        opts: "-a -s",
        operands: Operands::Text,
        style: 0,
        longs: "",
        recursive: &[],
        max: None,
        pattern_opts: &[],
    },
    Prog {
        names: &["sleep"],
        opts: "",
        operands: Operands::Text,
        style: 0,
        longs: "",
        recursive: &[],
        max: None,
        pattern_opts: &[],
    },
    Prog {
        names: &["true", "false", ":"],
        opts: "",
        operands: Operands::Text,
        style: 0,
        longs: "",
        recursive: &[],
        max: None,
        pattern_opts: &[],
    },
    Prog {
        // Builtin: -L/-P only.
        names: &["pwd"],
        opts: "-L -P",
        operands: Operands::None,
        style: 0,
        longs: "",
        recursive: &[],
        max: None,
        pattern_opts: &[],
    },
    Prog {
        // Builtins that describe names; nothing runs.
        names: &["type"],
        opts: "-a -f -p -P -t",
        operands: Operands::Text,
        style: 0,
        longs: "",
        recursive: &[],
        max: None,
        pattern_opts: &[],
    },
    Prog {
        names: &["break", "continue", "exit", "return"],
        opts: "",
        operands: Operands::Text,
        style: 0,
        longs: "",
        recursive: &[],
        max: Some(1),
        pattern_opts: &[],
    },
    Prog {
        names: &["numfmt"],
        opts: "-d= --delimiter= --field= --format= --from= --from-unit=n --grouping --header?=n \
               --invalid= --padding=n --round= --suffix= --to= --to-unit=n -z --zero-terminated",
        operands: Operands::Text,
        style: G,
        longs: "",
        recursive: &[],
        max: None,
        pattern_opts: &[],
    },
];

#[cfg(test)]
mod tests;
