/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * GAUDI_MAPPING_TABLE parser, driven directly (no device needed).
 */

#include "common/gaudi_unit.h"

#include <string.h>

namespace {

class mapping : public ::testing::Test {
protected:
    void SetUp() override
    {
        /* three devices as discovery reports them */
        static const char *bus[] = {"0000:19:00.0", "0000:1a:00.0",
                                    "0000:b3:00.0"};
        memset(m_devs, 0, sizeof(m_devs));
        for (int i = 0; i < 3; ++i) {
            m_devs[i].minor     = i;
            m_devs[i].module_id = 4 + i;
            m_devs[i].has_bus_id = 1;
            strcpy(m_devs[i].pci_addr, bus[i]);
            snprintf(m_devs[i].node_name, sizeof(m_devs[i].node_name),
                     "accel%d", i);
            EXPECT_EQ(UCS_OK, uct_gaudi_parse_bus_id(bus[i],
                                                     &m_devs[i].bus_id));
        }
    }

    ucs_status_t parse(const std::string &json)
    {
        return uct_gaudi_mapping_parse(json.c_str(), m_devs, 3, &m_map);
    }

    /* the error messages, joined */
    std::string errors() const
    {
        std::string s;
        for (unsigned i = 0; i < m_map.num_errors; ++i) {
            s += std::string(m_map.errors[i].msg) + "\n";
        }
        return s;
    }

    bool has_error(const std::vector<std::string> &words) const
    {
        for (unsigned i = 0; i < m_map.num_errors; ++i) {
            bool all = true;
            for (auto &w : words) {
                all = all && strstr(m_map.errors[i].msg, w.c_str());
            }
            if (all) {
                return true;
            }
        }
        return false;
    }

    static std::string entry(int index, int module, const char *bus)
    {
        return "{\"index\": " + std::to_string(index) + ", \"module_id\": " +
               std::to_string(module) + ", \"bus_id\": \"" + bus + "\"}";
    }

    uct_gaudi_dev_info_t m_devs[3];
    uct_gaudi_mapping_t  m_map;
};

} // namespace


TEST(bus_id, parse)
{
    ucs_sys_bus_id_t b;

    ASSERT_EQ(UCS_OK, uct_gaudi_parse_bus_id("0001:b3:1f.7", &b));
    EXPECT_EQ(1, b.domain);
    EXPECT_EQ(0xb3, b.bus);
    EXPECT_EQ(0x1f, b.slot);
    EXPECT_EQ(7, b.function);
    EXPECT_EQ(UCS_OK, uct_gaudi_parse_bus_id("ABCD:EF:00.0", &b));

    for (const char *bad : {"", "19:00.0", "0000:19:00", "0000:19:00.8",
                            "0000:19:20.0", "zzzz:19:00.0", "0000-19-00.0",
                            "0000:19:00.0 ", " 0000:19:00.0", "00000:19:00.0",
                            "0000:+9:00.0"}) {
        EXPECT_EQ(UCS_ERR_INVALID_PARAM, uct_gaudi_parse_bus_id(bad, &b))
                << "'" << bad << "'";
    }
}

TEST_F(mapping, renumbers_devices)
{
    ASSERT_EQ(UCS_OK, parse("[" + entry(2, 4, "0000:19:00.0") + ", " +
                            entry(0, 6, "0000:b3:00.0") + "]")) << errors();
    EXPECT_TRUE(m_map.doc_valid);
    EXPECT_EQ(2u, m_map.num_entries);
    EXPECT_EQ(2u, m_map.num_applied);
    EXPECT_EQ(2, m_map.index[0]);
    EXPECT_EQ(-1, m_map.index[1]); /* not in the table */
    EXPECT_EQ(0, m_map.index[2]);
}

TEST_F(mapping, empty_array)
{
    EXPECT_EQ(UCS_OK, parse(" [ ] "));
    EXPECT_EQ(0u, m_map.num_applied);
    EXPECT_EQ(-1, m_map.index[0]);
}

TEST_F(mapping, malformed_document_ignored_entirely)
{
    for (const char *doc : {"[", "{\"index\": 0}", "[{\"index\": 0,}]",
                            "\"text\"", "42", "[] trailing", "nul"}) {
        EXPECT_EQ(UCS_ERR_INVALID_PARAM, parse(doc)) << doc;
        EXPECT_EQ(1u, m_map.num_errors) << errors();
        EXPECT_EQ(-1, m_map.errors[0].entry);
        EXPECT_EQ(0u, m_map.num_applied);
        EXPECT_EQ(-1, m_map.index[0]);
    }
    parse("[1");
    EXPECT_TRUE(has_error({"malformed JSON"})) << errors();
    parse("{}");
    EXPECT_TRUE(has_error({"not a JSON array"})) << errors();
}

TEST_F(mapping, bad_entries_ignored_good_kept)
{
    std::string good = entry(7, 6, "0000:b3:00.0");
    struct {
        std::string json;
        std::vector<std::string> words;
    } cases[] = {
        {"3", {"entry 0", "not an object"}},
        {"{\"module_id\": 4, \"bus_id\": \"0000:19:00.0\"}",
         {"entry 0", "missing field \"index\""}},
        {"{\"index\": 0, \"bus_id\": \"0000:19:00.0\"}",
         {"entry 0", "missing field \"module_id\""}},
        {"{\"index\": 0, \"module_id\": 4}",
         {"entry 0", "missing field \"bus_id\""}},
        {"{\"index\": 0, \"module_id\": 4, \"bus_id\": \"0000:19:00.0\", "
         "\"name\": \"x\"}", {"entry 0", "unknown field \"name\""}},
        {"{\"index\": \"0\", \"module_id\": 4, \"bus_id\": \"0000:19:00.0\"}",
         {"entry 0", "\"index\" must be an integer", "\"0\""}},
        {"{\"index\": -1, \"module_id\": 4, \"bus_id\": \"0000:19:00.0\"}",
         {"entry 0", "\"index\" must be an integer", "-1"}},
        {"{\"index\": 1.5, \"module_id\": 4, \"bus_id\": \"0000:19:00.0\"}",
         {"entry 0", "\"index\" must be an integer", "1.5"}},
        {"{\"index\": 0, \"module_id\": -4, \"bus_id\": \"0000:19:00.0\"}",
         {"entry 0", "\"module_id\" must be an integer"}},
        {"{\"index\": 0, \"module_id\": 4, \"bus_id\": 19}",
         {"entry 0", "\"bus_id\" must be a string"}},
        {"{\"index\": 0, \"module_id\": 4, \"bus_id\": \"19:00.0\"}",
         {"entry 0", "\"bus_id\" must be a string \"dddd:bb:ss.f\"",
          "19:00.0"}},
        {"{\"index\": 0, \"index\": 1, \"module_id\": 4, "
         "\"bus_id\": \"0000:19:00.0\"}", {"entry 0", "appears twice"}},
        {entry(0, 4, "0000:55:00.0"),
         {"entry 0", "bus_id 0000:55:00.0 disagrees", "module_id 4"}},
        {entry(0, 9, "0000:55:00.0"),
         {"entry 0", "no device with bus_id 0000:55:00.0 and module_id 9"}},
        {entry(0, 5, "0000:19:00.0"),
         {"entry 0", "module_id 5 disagrees", "0000:19:00.0",
          "reports module_id 4"}},
    };

    for (auto &c : cases) {
        SCOPED_TRACE(c.json);
        EXPECT_EQ(UCS_ERR_INVALID_PARAM, parse("[" + c.json + ", " + good +
                                               "]"));
        EXPECT_TRUE(has_error(c.words)) << errors();
        EXPECT_EQ(1u, m_map.num_applied) << errors();
        EXPECT_EQ(-1, m_map.index[0]);
        EXPECT_EQ(7, m_map.index[2]) << "the good entry must stay applied";
    }
}

TEST_F(mapping, duplicates_reject_both_entries)
{
    std::string third = entry(5, 5, "0000:1a:00.0");

    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              parse("[" + entry(0, 4, "0000:19:00.0") + "," +
                    entry(0, 6, "0000:b3:00.0") + "," + third + "]"));
    EXPECT_TRUE(has_error({"entry 1", "index 0 is also used by entry 0"}))
            << errors();
    EXPECT_EQ(-1, m_map.index[0]);
    EXPECT_EQ(-1, m_map.index[2]);
    EXPECT_EQ(5, m_map.index[1]);

    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              parse("[" + entry(0, 4, "0000:19:00.0") + "," +
                    entry(1, 4, "0000:b3:00.0") + "," + third + "]"));
    EXPECT_TRUE(has_error({"entry 1", "module_id 4 is also used by entry 0"}))
            << errors();
    EXPECT_EQ(5, m_map.index[1]);

    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              parse("[" + entry(0, 4, "0000:19:00.0") + "," +
                    entry(1, 6, "0000:19:00.0") + "," + third + "]"));
    EXPECT_TRUE(has_error({"entry 1", "bus_id 0000:19:00.0 is also used"}))
            << errors();
    EXPECT_EQ(5, m_map.index[1]);
    EXPECT_EQ(1u, m_map.num_applied);
}

TEST_F(mapping, error_count_is_bounded)
{
    std::string doc = "[";

    for (int i = 0; i < 100; ++i) {
        doc += std::string(i ? "," : "") + "1";
    }
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, parse(doc + "]"));
    EXPECT_EQ(100u, m_map.num_errors);

    gaudi_unit::log_capture log;
    uct_gaudi_mapping_log_errors(&m_map);
    EXPECT_EQ((size_t)UCT_GAUDI_MAPPING_MAX_ERRORS + 1,
              log.count(UCS_LOG_LEVEL_ERROR));
    EXPECT_NE("", log.find({"GAUDI_MAPPING_TABLE", "68 more error(s)"}))
            << log.dump();
}
