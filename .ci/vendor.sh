#!/usr/bin/env bash
# Copy the browser assets from node_modules (npm ci, from the committed package-lock.json) into _vendor/, which
# Sphinx serves as static files: the book loads math, diagrams and widgets from itself, offline. (Not a root
# folder named _static: Jupyter Book 1 injects every script there into every page.)
set -euo pipefail
cd "$(dirname "$0")/.."
nm=node_modules
out=_vendor
# The widget modules ask for their icon fonts under the module's own name, relative to requirejs's baseUrl
# (set to _vendor/widgets by widgets-offline.js).
fonts="$out/widgets/@jupyter-widgets/html-manager/dist"
rm -rf "$out"
mkdir -p "$out/mathjax" "$out/mermaid/chunks" "$fonts"
cp -r "$nm/mathjax/es5/." "$out/mathjax/"
cp "$nm/mermaid/dist/mermaid.esm.min.mjs" "$out/mermaid/"
cp -r "$nm/mermaid/dist/chunks/mermaid.esm.min" "$out/mermaid/chunks/"
cp "$nm/requirejs/require.js" "$out/widgets/"
# embed-amd.js loads its fonts and chunks from the folder it lives in.
find "$nm/@jupyter-widgets/html-manager/dist" -maxdepth 1 -type f \
  ! -name '*.map' ! -name '*.d.ts' -exec cp {} "$out/widgets/" \;
find "$nm/@jupyter-widgets/html-manager/dist" -maxdepth 1 -type f \
  \( -name '*.woff' -o -name '*.woff2' -o -name '*.ttf' -o -name '*.eot' -o -name '*.svg' \) -exec cp {} "$fonts/" \;
# Our own glue between require.js, the widget manager and MathJax 3 (committed source).
cp book/_assets/widgets-offline.js "$out/widgets/"
for f in widgets/widgets-offline.js mathjax/tex-mml-chtml.js mermaid/mermaid.esm.min.mjs widgets/require.js widgets/embed-amd.js; do
  test -s "$out/$f" || { echo "vendor: $out/$f is missing" >&2; exit 1; }
done
echo "vendored: $(du -sh "$out" | cut -f1) in $out/"
