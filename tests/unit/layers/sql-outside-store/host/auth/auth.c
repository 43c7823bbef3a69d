/* A subsystem that keeps SQL of its own beside the store's. */
#include <sqlite3.h>

int auth_count(sqlite3 *db)
{
    sqlite3_stmt *st = 0;
    return sqlite3_prepare_v2(db, "SELECT count(*) FROM users", -1, &st, 0);
}
