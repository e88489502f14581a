#!/bin/sh
# Seeds the bash_plan fuzz corpus with the commands of the Bash corpus
# (tests/fixtures/bash_corpus.tsv), one file each, in fuzz/corpus/bash_plan
# (or the directory given). The corpus is generated, not tracked.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here/corpus/bash_plan}
mkdir -p "$out"
grep -v '^#' "$here/../tests/fixtures/bash_corpus.tsv" | cut -f2- | awk -v out="$out" '
    NF {
        gsub(/<NL>/, "\n"); gsub(/<TAB>/, "\t")
        f = sprintf("%s/seed-%04d", out, NR)
        printf "%s", $0 > f
        close(f)
    }'
echo "$(ls "$out" | wc -l) seeds in $out"
