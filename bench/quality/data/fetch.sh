#!/bin/sh
# Fetches the real graphs the recommendation-quality evaluation runs on, and converts them to
# relgraph JSON Lines beside this script (bench/quality/data/*.jsonl, not committed):
#   - email-Enron, pgp-strong-2009, hep-th and cond-mat-2005 from Debian's python3-graph-tool
#     package (graph_tool/collection/*.gt.gz), fetched with apt-get download (no install, no root);
#   - the Nostr follow graph shipped in the npm package nostr-social-graph (MIT), fetched with npm pack.
# Versions are pinned so that every run reads the same bytes. Needs apt-get, dpkg-deb, npm, and a
# build (npm run build). Re-running skips what is already there.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
relgraph="node $root/dist/src/cli/main.js"
GRAPH_TOOL_DEB=python3-graph-tool=2.45+ds-10
NOSTR_PACKAGE=nostr-social-graph@1.0.36
work="$here/downloads"
mkdir -p "$work"
cd "$work"

if [ ! -d collection ]; then
  apt-get download "$GRAPH_TOOL_DEB"
  mkdir -p extract
  dpkg-deb --fsys-tarfile python3-graph-tool_*.deb | tar -x -C extract --wildcards './usr/lib/python3/dist-packages/graph_tool/collection/*.gt.gz'
  mv extract/usr/lib/python3/dist-packages/graph_tool/collection collection
  rm -rf extract python3-graph-tool_*.deb
fi
for name in email-Enron pgp-strong-2009 hep-th cond-mat-2005; do
  [ -s "$here/$name.jsonl" ] || $relgraph eval convert "collection/$name.gt.gz" --out "$here/$name.jsonl" --name "$name"
done

if [ ! -f nostr/data/socialGraph.bin ]; then
  mkdir -p nostr
  tarball=$(npm pack "$NOSTR_PACKAGE" --silent)
  tar -xzf "$tarball" -C nostr --strip-components=1 package/data/socialGraph.bin package/LICENSE
  rm -f "$tarball"
fi
[ -s "$here/nostr.jsonl" ] || $relgraph eval convert nostr/data/socialGraph.bin --out "$here/nostr.jsonl" --name nostr
ls -l "$here"/*.jsonl
