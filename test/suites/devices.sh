# Real Gaudi devices for device mode (contrib/test.sh --device); sourced
# by contrib/test.sh and lib.sh.

# habanalabs_node NODE: the node belongs to the habanalabs driver (other
# accel drivers also create /dev/accel/accelN)
habanalabs_node() {
    local drv="/sys/class/accel/${1##*/}/device/driver"
    [ -c "$1" ] || return 1
    [ -e "$drv" ] || return 0   # /dev/hlN, or no driver link to check
    [ "$(basename "$(readlink -f "$drv")")" = habanalabs ]
}

# free_devices: compute nodes (accelN, hlN) of the habanalabs driver that no
# process holds open, one path a line. Root sees every process's fds;
# others see only their own, and an open of a held device then fails with
# EBUSY without touching it (facts 7.1).
free_devices() {
    local held n
    held=$(for f in /proc/[0-9]*/fd/*; do readlink "$f"; done 2>/dev/null |
           grep -E '^/dev/(accel/accel|hl)[0-9]+$' | sort -u)
    for n in /dev/accel/accel[0-9]* /dev/hl[0-9]*; do
        habanalabs_node "$n" || continue
        grep -qx -- "$n" <<< "$held" || echo "$n"
    done
}
