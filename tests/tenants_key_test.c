// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Tenant keys (daemon/tenants_key.c): root's NAME and a member's UID:NAME,
 * the uid in one form only, so one tenant has one key however its uid was
 * written, and a key within the 63 bytes every name buffer holds.
 */
#include <errno.h>
#include <string.h>
#include "kselftest_harness.h"
#include "coloc/protocol.h"
#include "tenants_key.h"

TEST(key__roots_is_the_name_a_members_carries_its_uid)
{
	char key[COLOC_MAX_NAME];

	ASSERT_EQ(0, tenants_key(key, 0, "mobilenet"));
	EXPECT_STREQ("mobilenet", key);
	ASSERT_EQ(0, tenants_key(key, 64990, "mobilenet"));
	EXPECT_STREQ("64990:mobilenet", key);
	EXPECT_STREQ("mobilenet", tenants_key_name(key));
	EXPECT_EQ(64990, tenants_key_owner(key));
	EXPECT_EQ(0, tenants_key_owner("mobilenet"));
}

TEST(key__past_63_bytes_is_too_long)
{
	char key[COLOC_MAX_NAME], name[64];

	memset(name, 'n', 57);
	name[57] = '\0';
	EXPECT_EQ(0, tenants_key(key, 64990, name));
	EXPECT_EQ(63, (int)strlen(key));
	name[57] = 'n';
	name[58] = '\0';
	EXPECT_EQ(-ENAMETOOLONG, tenants_key(key, 64990, name));
	EXPECT_EQ(0, tenants_key(key, 0, name));
}

TEST(split__only_a_canonical_uid_below_the_invalid_one)
{
	const struct {
		const char *s;
		bool split;
		uid_t uid;
		const char *name;
	} cases[] = {
		{ "0:x", true, 0, "x" },
		{ "64990:x", true, 64990, "x" },
		{ "4294967294:x", true, 4294967294u, "x" },
		{ "4294967295:x", false, 0, "4294967295:x" }, /* (uid_t)-1: no one's */
		{ "99999999999:x", false, 0, "99999999999:x" },
		{ "064990:x", false, 0, "064990:x" }, /* a second spelling of 64990 */
		{ ":x", false, 0, ":x" },
		{ "x", false, 0, "x" },
		{ "a1:x", false, 0, "a1:x" },
		{ "1:2:x", true, 1, "2:x" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uid_t uid = 0;
		const char *name;

		EXPECT_EQ(cases[i].split, tenants_key_split(cases[i].s, &uid, &name))
		TH_LOG("%s", cases[i].s);
		EXPECT_EQ(cases[i].uid, uid) TH_LOG("%s", cases[i].s);
		EXPECT_STREQ(cases[i].name, name);
	}
}

TEST_HARNESS_MAIN
