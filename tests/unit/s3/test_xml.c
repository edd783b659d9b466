/* test_xml.c: S3's XML answers (format/s3/xml.c): listings of objects
 * whose names XML must escape. */
#include "../unit.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "s3/s3.h"
#include "objstore/objstore.h"

/* A listing's names with an empty, "." or ".." part (which S3 keys may
 * have, and a hostile server may send) are left out; the others stay. */
static void test_xml_odd_names(void)
{
    static const char body[] =
        "<?xml version=\"1.0\"?><ListBucketResult>"
        "<Contents><Key>p/ok</Key><Size>1</Size></Contents>"
        "<Contents><Key>p/..</Key><Size>1</Size></Contents>"
        "<Contents><Key>p/a/../b</Key><Size>1</Size></Contents>"
        "<Contents><Key>p/./c</Key><Size>1</Size></Contents>"
        "<Contents><Key>p//d</Key><Size>1</Size></Contents>"
        "<Contents><Key>p/e/f.tdb</Key><Size>2</Size></Contents>"
        "<CommonPrefixes><Prefix>p/../</Prefix></CommonPrefixes>"
        "<CommonPrefixes><Prefix>p/g/</Prefix></CommonPrefixes>"
        "</ListBucketResult>";
    struct tdb_buf b = {(uint8_t *)body, sizeof body - 1, sizeof body, true};
    struct tdb_store_answer x;
    CHECK_EQ_INT(tdb_s3_xml_parse(&x, &b, "p/"), 0);
    CHECK_EQ_INT(x.n, 3);
    for (size_t i = 0; i < x.n; i++)
        CHECK(!strcmp(x.e[i].name, "ok") || !strcmp(x.e[i].name, "e/f.tdb") ||
              (!strcmp(x.e[i].name, "g") && x.e[i].is_dir));
    tdb_store_answer_free(&x);
}

int main(void)
{
    tdb_s3_global_init();
    RUN(test_xml_odd_names);
    return unit_done();
}
