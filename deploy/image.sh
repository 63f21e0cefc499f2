#!/bin/sh
# The commands deploy/Dockerfile builds the image with, in one place: test/service/package.test.ts runs these
# same steps in a scratch folder, as the image's stages do (no container engine runs where the tests
# run, so the image itself is not built there).
#
#   sh deploy/image.sh pack DEST               in a copy of the repository: the package, as `npm pack`
#                                              makes it (its prepack step builds the bundle), into DEST
#   sh deploy/image.sh install TGZ LOCK APP    that package unpacked into APP with its dependencies as
#                                              LOCK (package-lock.json) pins them, less development's
set -eu
case "${1:-}" in
pack)
  # The bundle is built with esbuild, the admin page's with its client (openapi-fetch, a development
  # dependency); nothing native is needed to pack.
  npm ci --ignore-scripts --no-audit --no-fund
  mkdir -p "$2"
  npm pack --pack-destination "$2"
  ;;
install)
  mkdir -p "$4"
  tar -xzf "$2" -C "$4" --strip-components=1
  cp "$3" "$4/package-lock.json"
  # npm ci, not install: the dependency tree the tests ran on, not ranges resolved anew. It builds
  # better-sqlite3 from source where no prebuilt binary can be downloaded.
  cd "$4" && npm ci --omit=dev --no-audit --no-fund
  ;;
*)
  echo "usage: sh deploy/image.sh pack DEST | install TGZ LOCK APP" >&2
  exit 2
  ;;
esac
