/*
 * tests/unit/lua/test_lua_json.c - lua_json_encode, the bridge's one JSON
 * encoder (kernel answers, loom.json_encode): a loom_error whose code tells
 * bad input (a value JSON cannot hold, named) from the host's own fault,
 * and loom.json_encode raising that message in the script.
 */
#include <math.h>
#include <stdlib.h>


#include "../../check.h"
#include "plugin/lua_internal.h"

/* Runs `chunk`, which leaves one value, and encodes it. */
static loom_error *encode(lua_State *L, const char *chunk, char **text)
{
    lua_settop(L, 0);
    CHECK_MSG(luaL_dostring(L, chunk) == LUA_OK, "%s", lua_tostring(L, -1));
    return lua_json_encode(L, -1, text);
}

int main(void)
{
    lua_State *L = luaL_newstate();
    CHECK(L != NULL);
    char *text;

    CHECK(encode(L, "return {b = 2, a = {1, 2.5, 'x'}}", &text) == NULL);
    CHECK_STR_EQ(text, "{\"a\":[1,2.5,\"x\"],\"b\":2}");
    free(text);

    struct {
        const char *chunk, *why;
    } refused[] = {
        {"return 0/0", "JSON has no NaN or infinity"},
        {"return {f = function() end}", "cannot encode a function value"},
        {"return {[true] = 1}", "cannot encode a table with a boolean key"},
        {"local t = {} t.t = t return t", "nested deeper than"},
    };
    for (size_t i = 0; i < sizeof refused / sizeof *refused; i++) {
        text = (char *)"unchanged";
        loom_error *e = encode(L, refused[i].chunk, &text);
        CHECK_MSG(loom_err_code(e) == LOOM_E_INVALID, "%s: code %d", refused[i].chunk,
                  (int)loom_err_code(e));
        CHECK_CONTAINS(loom_err_message(e), refused[i].why);
        CHECK(text == NULL);
        loom_err_free(e);
    }

    /* The script's loom.json_encode raises the same message. */
    lua_settop(L, 0);
    lua_pushcfunction(L, lua_json_encode_function);
    lua_setglobal(L, "json_encode");
    CHECK(luaL_dostring(L, "return json_encode({x = 0/0})") != LUA_OK);
    CHECK_CONTAINS(lua_tostring(L, -1), "loom.json_encode: cannot encode");
    lua_close(L);
    return CHECK_DONE();
}
