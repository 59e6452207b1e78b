#!/bin/sh
# Installs the desktop entry, icon and .revs file type for one user (freedesktop).
#   sh packaging/install-desktop.sh [DATADIR] [EXEC]
# DATADIR defaults to $XDG_DATA_HOME or ~/.local/share; EXEC is the command the
# entry runs (default: revstudio on PATH). `make install-desktop` calls this with
# the venv's revstudio; `sh packaging/install-desktop.sh --uninstall [DATADIR]` removes it all.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
uninstall=""
if [ "${1:-}" = "--uninstall" ]; then uninstall=1; shift; fi
data=${1:-${XDG_DATA_HOME:-$HOME/.local/share}}
exec_cmd=${2:-revstudio}

apps="$data/applications"
apps_icon="$data/icons/hicolor/scalable/apps"
mime_icon="$data/icons/hicolor/scalable/mimetypes"
mime_pkg="$data/mime/packages"

refresh() {
    # Each cache is optional: a desktop without the tool reads the files directly.
    if command -v update-mime-database >/dev/null 2>&1; then update-mime-database "$data/mime" || true; fi
    if command -v update-desktop-database >/dev/null 2>&1; then update-desktop-database -q "$apps" || true; fi
    if command -v gtk-update-icon-cache >/dev/null 2>&1 && [ -f "$data/icons/hicolor/index.theme" ]; then
        gtk-update-icon-cache -q -t -f "$data/icons/hicolor" || true
    fi
}

if [ -n "$uninstall" ]; then
    rm -f "$apps/revstudio.desktop" "$apps_icon/revstudio.svg" \
          "$mime_icon/application-x-revstudio-project.svg" "$mime_pkg/revstudio.xml"
    [ -d "$data/mime" ] && refresh
    echo "removed revstudio's desktop entry, icon and file type from $data"
    exit 0
fi

mkdir -p "$apps" "$apps_icon" "$mime_icon" "$mime_pkg"
# Exec and TryExec name the command to run; a path with spaces is quoted as the spec asks.
case "$exec_cmd" in
    *" "*) exec_field="\"$exec_cmd\"" ;;
    *) exec_field="$exec_cmd" ;;
esac
sed -e "s|^Exec=.*|Exec=$exec_field %f|" -e "s|^TryExec=.*|TryExec=$exec_cmd|" \
    "$here/revstudio.desktop" > "$apps/revstudio.desktop.tmp"
mv "$apps/revstudio.desktop.tmp" "$apps/revstudio.desktop"
cp "$root/resources/icons/revstudio.svg" "$apps_icon/revstudio.svg"
cp "$root/resources/icons/revstudio.svg" "$mime_icon/application-x-revstudio-project.svg"
cp "$here/revstudio-mime.xml" "$mime_pkg/revstudio.xml"
refresh
echo "installed revstudio.desktop, its icon and the .revs file type into $data (runs: $exec_cmd)"
