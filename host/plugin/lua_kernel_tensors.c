/*
 * plugin/lua_kernel_tensors.c - a v2 model's tensors for Lua kernels (see
 * lua_kernel.c): a request's decoded inputs as tables {name =, datatype =,
 * shape = {...}, data = {...}} (data flat, integers as Lua integers, BOOL
 * as booleans), and an answer's {outputs = {...}} of the same tables
 * (shape defaults to {#data}) handed to respond_tensors.
 */
#include "plugin/lua_internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "plugin/dtype_names.h"

#define LUA_TENSORS_MAX 16

static void push_element(lua_State *L, int32_t dtype, const char *p)
{
    union {
        int8_t i8; uint8_t u8; int16_t i16; uint16_t u16; int32_t i32; uint32_t u32;
        int64_t i64; uint64_t u64; float f32; double f64;
    } v;
    memcpy(&v, p, dtype_size(dtype));
    switch (dtype) {
    case LOOM_DTYPE_BOOL: lua_pushboolean(L, v.u8 != 0); break;
    case LOOM_DTYPE_I8: lua_pushinteger(L, v.i8); break;
    case LOOM_DTYPE_U8: lua_pushinteger(L, v.u8); break;
    case LOOM_DTYPE_I16: lua_pushinteger(L, v.i16); break;
    case LOOM_DTYPE_U16: lua_pushinteger(L, v.u16); break;
    case LOOM_DTYPE_I32: lua_pushinteger(L, v.i32); break;
    case LOOM_DTYPE_U32: lua_pushinteger(L, v.u32); break;
    case LOOM_DTYPE_I64: lua_pushinteger(L, v.i64); break;
    case LOOM_DTYPE_U64:
        if (v.u64 > (uint64_t)INT64_MAX)
            lua_pushnumber(L, (lua_Number)v.u64);
        else
            lua_pushinteger(L, (lua_Integer)v.u64);
        break;
    case LOOM_DTYPE_F32: lua_pushnumber(L, v.f32); break;
    default: lua_pushnumber(L, v.f64); break;
    }
}

void lua_kernel_push_inputs(lua_State *L, const loom_infer_request *r)
{
    if (!LOOM_STRUCT_HAS(r, loom_infer_request, inputs) || !r->input_count)
        return;
    lua_createtable(L, (int)r->input_count, 0);
    for (uint32_t i = 0; i < r->input_count; i++) {
        const loom_tensor_view *t = &r->inputs[i];
        size_t size = dtype_size(t->dtype), n = size ? (size_t)(t->nbytes / size) : 0;
        lua_createtable(L, 0, 4);
        lua_set_string(L, "name", t->name ? t->name : "");
        lua_set_string(L, "datatype", dtype_name(t->dtype) ? dtype_name(t->dtype) : "");
        lua_createtable(L, (int)t->ndim, 0);
        for (uint32_t k = 0; k < t->ndim; k++) {
            lua_pushinteger(L, t->shape[k]);
            lua_rawseti(L, -2, (lua_Integer)k + 1);
        }
        lua_setfield(L, -2, "shape");
        lua_createtable(L, n < INT32_MAX ? (int)n : 0, 0);
        for (size_t k = 0; k < n; k++) {
            push_element(L, t->dtype, (const char *)t->data + k * size);
            lua_rawseti(L, -2, (lua_Integer)k + 1);
        }
        lua_setfield(L, -2, "data");
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    lua_setfield(L, -2, "inputs");
}

/* Element k of a data table at `data` stored at dst as dtype. */
static void store_element(lua_State *L, int data, lua_Integer k, int32_t dtype, char *dst,
                          const char *where)
{
    int type = lua_rawgeti(L, data, k);
    if (dtype == LOOM_DTYPE_BOOL) {
        if (type != LUA_TBOOLEAN)
            luaL_error(L, "%s: data[%d]: expected a boolean (BOOL)", where, (int)k);
        *dst = (char)lua_toboolean(L, -1);
    } else if (dtype == LOOM_DTYPE_F32 || dtype == LOOM_DTYPE_F64) {
        if (type != LUA_TNUMBER)
            luaL_error(L, "%s: data[%d]: expected a number", where, (int)k);
        double d = lua_tonumber(L, -1);
        float f = (float)d;
        if (dtype == LOOM_DTYPE_F32)
            memcpy(dst, &f, 4);
        else
            memcpy(dst, &d, 8);
    } else {
        int whole = 0;
        lua_Integer v = lua_tointegerx(L, -1, &whole);
        if (type != LUA_TNUMBER || !whole)
            luaL_error(L, "%s: data[%d]: expected a whole number", where, (int)k);
        int8_t i8 = (int8_t)v;
        int16_t i16 = (int16_t)v;
        int32_t i32 = (int32_t)v;
        switch (dtype_size(dtype)) {
        case 1: memcpy(dst, &i8, 1); break;
        case 2: memcpy(dst, &i16, 2); break;
        case 4: memcpy(dst, &i32, 4); break;
        default: memcpy(dst, &v, 8); break;
        }
    }
    lua_pop(L, 1);
}

/* The output table at `at` into view v (its data in a userdata left on
 * the stack, so Lua owns it). */
static void read_output(lua_State *L, int at, loom_tensor_view *v, const char *where)
{
    if (!lua_istable(L, at))
        luaL_error(L, "%s: expected a table {name =, datatype =, shape =, data =}", where);
    lua_getfield(L, at, "name");
    v->name = lua_isstring(L, -1) ? lua_tostring(L, -1) : NULL; /* kept by the table */
    lua_pop(L, 1);
    lua_getfield(L, at, "datatype");
    size_t tn = 0;
    const char *type = lua_isstring(L, -1) ? lua_tolstring(L, -1, &tn) : "";
    v->dtype = dtype_parse(type, tn);
    lua_pop(L, 1);
    if (v->dtype < 0)
        luaL_error(L, "%s: datatype: expected " DTYPE_NAME_LIST, where);
    if (lua_getfield(L, at, "data") != LUA_TTABLE)
        luaL_error(L, "%s: data: expected an array", where);
    int data = lua_gettop(L);
    lua_Integer n = (lua_Integer)lua_rawlen(L, data);
    if (lua_getfield(L, at, "shape") == LUA_TTABLE) {
        v->ndim = (uint32_t)lua_rawlen(L, -1);
        if (v->ndim > LOOM_MAX_DIMS)
            luaL_error(L, "%s: shape: more than %d dimensions", where, LOOM_MAX_DIMS);
        for (uint32_t k = 0; k < v->ndim; k++) {
            lua_rawgeti(L, -1, (lua_Integer)k + 1);
            v->shape[k] = lua_tointeger(L, -1);
            lua_pop(L, 1);
        }
    } else {
        v->ndim = 1;
        v->shape[0] = n;
    }
    lua_pop(L, 1);
    size_t size = dtype_size(v->dtype);
    char *buf = lua_newuserdatauv(L, (size_t)n * size + 1, 0);
    for (lua_Integer k = 1; k <= n; k++)
        store_element(L, data, k, v->dtype, buf + (size_t)(k - 1) * size, where);
    v->data = buf;
    v->nbytes = (uint64_t)n * size;
    lua_remove(L, data); /* the userdata stays */
}

void lua_kernel_respond_tensors(lua_State *L, int outputs, loom_infer_request *r, int index,
                                loom_error **err)
{
    *err = NULL;
    if (!LOOM_STRUCT_HAS(r, loom_infer_request, respond_tensors) || !r->respond_tensors)
        luaL_error(L, "execute: response %d: outputs: this host takes no tensors", index);
    size_t n = lua_rawlen(L, outputs);
    if (n > LUA_TENSORS_MAX)
        luaL_error(L, "execute: response %d: more than %d outputs", index, LUA_TENSORS_MAX);
    luaL_checkstack(L, 2 * (int)n + 8, "execute: outputs");
    loom_tensor_view views[LUA_TENSORS_MAX];
    memset(views, 0, sizeof views);
    for (size_t i = 0; i < n; i++) {
        char where[64];
        snprintf(where, sizeof where, "execute: response %d: outputs[%d]", index, (int)i + 1);
        views[i].struct_size = sizeof views[i];
        lua_rawgeti(L, outputs, (lua_Integer)i + 1);
        read_output(L, lua_gettop(L), &views[i], where);
    }
    *err = r->respond_tensors(r, views, (uint32_t)n);
}
