#!/bin/sh
# Put each MPI rank on an emulated node of its own: HLSIM_ROOT becomes
# $NODES_DIR/node<rank>, and the rank's pid is written to
# $NODES_DIR/rank<rank>.pid (for the peer-death cases); used by 85-tcp.sh
rank=${OMPI_COMM_WORLD_RANK:?not started by Open MPI}
HLSIM_ROOT=${NODES_DIR:?}/node$rank
export HLSIM_ROOT
echo $$ > "$NODES_DIR/rank$rank.pid"
exec "$@"
