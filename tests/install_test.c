// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * make install and make uninstall as a packager runs them: into a DESTDIR,
 * with the default PREFIX. The files land where the Makefile says, the
 * installed binaries are the built ones, the unit names the installed
 * colocd and passes systemd-analyze verify with the DESTDIR tree mounted
 * over /usr/local in a private mount namespace (the host's /usr/local is
 * untouched), and uninstall leaves no file behind.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include "kselftest_harness.h"
#include "testutil.h"
#include "version.h"

#define INSTALL_PREFIX "/usr/local"

FIXTURE(install)
{
	char dest[64];
	char out[16384];
};

/* make TARGET in the repository, DESTDIR=dest; the exit status. */
static int install_make(const char *target, const char *dest, char *out, size_t len)
{
	const char *root = getenv("COLOC_ROOT");
	const char *san = getenv("SANITIZE");
	char cmd[1024];

	/* a fresh make: the outer one's jobserver fds are not ours */
	snprintf(cmd, sizeof(cmd),
		 "env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -C '%s' --no-print-directory %s "
		 "DESTDIR='%s' PREFIX=" INSTALL_PREFIX " SANITIZE=%s",
		 root && *root ? root : ".", target, dest, san && *san ? san : "0");
	return tu_run(cmd, out, len);
}

static bool install_has(const char *dest, const char *path, mode_t mode)
{
	char full[512];
	struct stat st;

	snprintf(full, sizeof(full), "%s" INSTALL_PREFIX "/%s", dest, path);
	return !stat(full, &st) && S_ISREG(st.st_mode) && (st.st_mode & 07777) == mode;
}

FIXTURE_SETUP(install)
{
	strcpy(self->dest, "/tmp/coloc-install.XXXXXX");
	ASSERT_NE(NULL, mkdtemp(self->dest));
	ASSERT_EQ(0, install_make("install", self->dest, self->out, sizeof(self->out)))
	TH_LOG("make install failed:\n%s", self->out);
}

FIXTURE_TEARDOWN(install)
{
	tu_remove_tree(self->dest);
}

TEST_F(install, make_install__puts_each_part_under_destdir_and_prefix)
{
	char cmd[512];

	EXPECT_TRUE(install_has(self->dest, "sbin/colocd", 0755));
	EXPECT_TRUE(install_has(self->dest, "bin/colocctl", 0755));
	EXPECT_TRUE(install_has(self->dest, "bin/coloc-run", 0755));
	EXPECT_TRUE(install_has(self->dest, "lib/systemd/system/colocd.service", 0644));
	EXPECT_TRUE(install_has(self->dest, "lib/sysusers.d/coloc.conf", 0644));
	EXPECT_TRUE(install_has(self->dest, "share/man/man8/colocd.8", 0644));
	EXPECT_TRUE(install_has(self->dest, "share/man/man1/colocctl.1", 0644));
	EXPECT_TRUE(install_has(self->dest, "share/coloc/models/resnet50.model", 0644));
	/* the benchmarks need the source tree and stay out */
	EXPECT_FALSE(install_has(self->dest, "bin/coloc-bench-sensing", 0755));
	/* nothing outside PREFIX: the only entry of DESTDIR/usr is local */
	snprintf(cmd, sizeof(cmd), "ls -A '%s' '%s/usr'", self->dest, self->dest);
	ASSERT_EQ(0, tu_run(cmd, self->out, sizeof(self->out)));
	EXPECT_NE(NULL, strstr(self->out, "/usr:\nlocal\n"))
	TH_LOG("DESTDIR holds more than PREFIX:\n%s", self->out);
}

TEST_F(install, make_install__installs_the_built_binaries_with_their_version)
{
	char cmd[1024], bin[512];

	snprintf(cmd, sizeof(cmd), "cmp '%s' '%s" INSTALL_PREFIX "/sbin/colocd'",
		 tu_bin("colocd", bin, sizeof(bin)), self->dest);
	EXPECT_EQ(0, tu_run(cmd, self->out, sizeof(self->out)))
	TH_LOG("%s", self->out);
	snprintf(cmd, sizeof(cmd), "'%s" INSTALL_PREFIX "/bin/colocctl' --version", self->dest);
	ASSERT_EQ(0, tu_run(cmd, self->out, sizeof(self->out)));
	EXPECT_STREQ("colocctl (coloc) " COLOC_VERSION "\n", self->out);
	snprintf(cmd, sizeof(cmd), "'%s" INSTALL_PREFIX "/sbin/colocd' --version", self->dest);
	ASSERT_EQ(0, tu_run(cmd, self->out, sizeof(self->out)));
	EXPECT_STREQ("colocd (coloc) " COLOC_VERSION "\n", self->out);
}

TEST_F(install, unit__starts_the_installed_colocd)
{
	char path[512], line[512];
	bool found = false;
	FILE *f;

	snprintf(path, sizeof(path), "%s" INSTALL_PREFIX "/lib/systemd/system/colocd.service",
		 self->dest);
	f = fopen(path, "r");
	ASSERT_NE(NULL, f);
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "ExecStart=", 10)) {
			EXPECT_STREQ("ExecStart=" INSTALL_PREFIX "/sbin/colocd\n", line);
			found = true;
		}
	fclose(f);
	EXPECT_TRUE(found);
}

TEST_F(install, unit__passes_systemd_analyze_verify)
{
	char cmd[1024];
	int rc;

	if (tu_run("command -v systemd-analyze", NULL, 0))
		SKIP(return, "systemd-analyze is missing (apt-get install systemd)");
	if (tu_run("unshare -m true", NULL, 0))
		SKIP(return, "cannot make a mount namespace here (unshare -m)");
	/*
	 * Verify checks that ExecStart= exists and that man finds each page in
	 * Documentation=, so the tree must sit where it will be installed.
	 */
	snprintf(cmd, sizeof(cmd),
		 "unshare -m sh -c 'mount --bind %s" INSTALL_PREFIX " " INSTALL_PREFIX
		 " && systemd-analyze verify %s " INSTALL_PREFIX
		 "/lib/systemd/system/colocd.service'",
		 self->dest, tu_run("command -v man", NULL, 0) ? "--man=no" : "");
	rc = tu_run(cmd, self->out, sizeof(self->out));
	EXPECT_EQ(0, rc);
	/* verify exits 0 on some warnings; it prints nothing for a clean unit */
	EXPECT_STREQ("", self->out);
}

TEST_F(install, make_uninstall__removes_every_installed_file)
{
	char cmd[256];

	ASSERT_EQ(0, install_make("uninstall", self->dest, self->out, sizeof(self->out)))
	TH_LOG("make uninstall failed:\n%s", self->out);
	snprintf(cmd, sizeof(cmd), "find '%s' ! -type d", self->dest);
	ASSERT_EQ(0, tu_run(cmd, self->out, sizeof(self->out)));
	EXPECT_STREQ("", self->out);
}

TEST_HARNESS_MAIN
