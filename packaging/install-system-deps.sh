#!/bin/sh
# Installs Xvfb and the X11/xcb libraries a real Qt window needs (Debian).
# Used by `make test` so the real-window tests run on a fresh machine.
set -e
need=""
command -v Xvfb >/dev/null 2>&1 || need=1
command -v xdotool >/dev/null 2>&1 || need=1
[ -e /usr/lib/x86_64-linux-gnu/libxcb-icccm.so.4 ] || [ -e /usr/lib/aarch64-linux-gnu/libxcb-icccm.so.4 ] || need=1
[ -z "$need" ] && exit 0
if [ "$(id -u)" != "0" ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "note: Xvfb/xcb libraries missing and cannot be installed here; real-window tests will be skipped" >&2
    exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null
apt-get install -y -qq --no-install-recommends \
    xvfb xauth libxkbcommon-x11-0 libxcb-icccm4 libxcb-keysyms1 libxcb-image0 \
    libxcb-render-util0 libxcb-xinerama0 libxcb-randr0 libxcb-shape0 libxcb-xfixes0 \
    libxcb-cursor0 libxcb-xkb1 libxcb-sync1 libxcb-render0 libxcb-shm0 libxcb1 \
    libegl1 libgl1 libfontconfig1 libdbus-1-3 fonts-dejavu-core xdotool >/dev/null
