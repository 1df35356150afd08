# Shared by the bench scripts: source it after `cd` to the repository root.
# rss LOG / wall LOG: peak RSS in MB and wall seconds from a `/usr/bin/time -v` log.
rss() { awk -F': ' '/Maximum resident set size/ {printf "%.0f", $2/1024}' "$1"; }
wall() { awk -F': ' '/Elapsed \(wall clock\)/ {n=split($2,a,":"); s=0; for(i=1;i<=n;i++) s=s*60+a[i]; printf "%.2f", s}' "$1"; }
command -v /usr/bin/time >/dev/null || { apt-get install -y -qq time >/dev/null; }
# The machine and its load, for the heading of a results table: timings on a busy machine are
# not comparable with those on an idle one.
machine() { echo "$(nproc) cores, $(free -g | awk '/Mem:/ {print $2}') GiB RAM, load $(cut -d' ' -f1 /proc/loadavg)"; }
