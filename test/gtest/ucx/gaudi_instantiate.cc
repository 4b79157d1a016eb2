/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * UCX 1.13.1 instantiates its uct suites only for hard-coded component and
 * transport names; this adds the Gaudi ones.
 */

#include <uct/uct_test.h>
#include <uct/test_md.h>
#include <uct/test_p2p_rma.h>
#include <uct/test_p2p_mix.h>

_UCT_MD_INSTANTIATE_TEST_CASE(test_md, gaudi_copy)
_UCT_MD_INSTANTIATE_TEST_CASE(test_md, gaudi_ipc)
_UCT_INSTANTIATE_TEST_CASE(uct_p2p_rma_test, gaudi_cpy)
_UCT_INSTANTIATE_TEST_CASE(uct_p2p_mix_test, gaudi_cpy)
