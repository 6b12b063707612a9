/* Native AST matching for agentgauge.graders.ast (optional; see docs/graders.md).

   `CompiledKey.match` decides here what the lookup sets of its compiled
   `Spec`s decide (graders/_ast_spec.py), with the same result as the Python
   code in graders/ast.py, and hands everything else to that Python code:

   - one call named as expected (the simple and multiple categories): its
     arguments, as `_Expected.check_compiled` judges them;
   - parallel calls: every call fits the expected call in its own position, or
     an expected call fits no call at all (reported as `CompiledKey._explain`
     does). When a pairing has to be searched, Python's matching runs.

   An argument is decided when it is
   - a string found as written in `spec.raw`, or ASCII text whose BFCL normal
     form (drop " ,./-_*^", ' -> ", lower case) is or is not in `spec.str_accept`;
   - an int, float, bool or None in or not in `spec.accept[type(value)]`;
   - a flat list found as written in `spec.raw_lists`, with the same item types;
   - a value of a type the schema rejects: among the acceptable values of that
     very type (`spec.var_cache`, BFCL's "variable" rule), or a type error.
   After an argument fails, a missing required parameter is reported first (as
   `_Expected._reject`); after all pass, a key parameter left out that the key
   does not let be omitted. Details are Python's text: the spec's cached head
   and tail around the value's repr, or the spec's own `miss` / `type_miss`.

   Everything else goes to Python: a parameter with no spec yet, non-ASCII
   text, dicts and lists the sets cannot judge, a rejected type whose table is
   not built, a key whose required parameters are not yet known to lie in it,
   objects of other classes than those configure() was given.

   The classes' attributes are read from their __slots__ at the offsets their
   member descriptors give, for an object whose type is exactly that class.
   The pure-Python path is the reference and runs wherever this module is not
   built; tests/graders/test_ast_native.py compares the two. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <structmember.h>

/* Interned strings: error types, attribute names, constants. */
static PyObject *e_unexpected, *e_list, *e_string, *e_others, *e_type, *e_required, *e_optional, *e_name;
static PyObject *s_miss, *s_type_miss, *s_empty, *s_python, *s_simple;
static PyObject *ok;       /* (True, None, "") */
static PyObject *rejected; /* (False, None, ""): a verdict without its reason */
static PyObject *numbers[64]; /* "0" to "63", for the details of parallel calls */

/* Set by configure(). */
static PyObject *one_call_names, *parallel_names, *python_match;
static PyTypeObject *key_type, *expected_type, *spec_type;
/* _ast_spec.canon, ast._structured_ok, and tag_list's stand-ins for True,
   False and None. */
static PyObject *canon_fn, *structured_ok_fn, *tag_true, *tag_false, *tag_null;
/* _ast_spec.KIND; _ast_structured's Alternatives, DictPattern, _DICT, _UNKNOWN. */
static PyObject *kinds, *dict_tag, *unknown_value;
static PyTypeObject *alternatives_type, *pattern_type;
static Py_ssize_t o_structured, o_structured_built, o_schema, o_alt_dicts, o_alt_lists,
    o_alt_literals, o_pattern_keys, o_pattern_needed;
static PyObject *s_type, *s_items;
static PyObject *k_any, *k_str, *k_int, *k_float, *k_bool, *k_null, *k_list, *k_dict, *s_open,
    *s_close, *s_no_call, *s_colon;
static Py_ssize_t o_first, o_first_name, o_expected, o_language, o_name_equivalence;
static Py_ssize_t o_props, o_key_name, o_key, o_specs, o_required, o_required_in_key, o_compiled,
    o_strings;
static Py_ssize_t o_raw, o_str_accept, o_accept, o_var_cache, o_raw_lists, o_head, o_post,
    o_type_head, o_items_kind;

/* A slot's value (borrowed; NULL when unset). */
#define SLOT(obj, offset) (*(PyObject **)((char *)(obj) + (offset)))

enum { GIVE_UP = 0, ACCEPTED = 1, MISS = 2, TYPE_MISS = 3, ERROR = -1 };

#define MAX_CALLS 64 /* parallel outputs with more calls go to Python */
#define VERDICT (-1)  /* `explain` for check_args: only whether it passes */

/* `_ast_spec.canon(value)`: for ASCII text its BFCL normal form as bytes, made
   here; for other text, canon's own answer. */
static PyObject *
canonical(PyObject *value)
{
    if (!PyUnicode_IS_ASCII(value))
        return PyObject_CallOneArg(canon_fn, value);
    Py_ssize_t n = PyUnicode_GET_LENGTH(value);
    const Py_UCS1 *src = PyUnicode_1BYTE_DATA(value);
    char small[256];
    char *buf = n <= (Py_ssize_t)sizeof small ? small : PyMem_Malloc((size_t)n);
    if (buf == NULL)
        return PyErr_NoMemory();
    Py_ssize_t m = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        char c = (char)src[i];
        switch (c) {
        case ' ': case ',': case '.': case '/': case '-': case '_': case '*': case '^':
            continue;
        case '\'':
            c = '"';
            break;
        default:
            if (c >= 'A' && c <= 'Z')
                c = (char)(c + ('a' - 'A'));
        }
        buf[m++] = c;
    }
    PyObject *norm = PyBytes_FromStringAndSize(buf, m);
    if (buf != small)
        PyMem_Free(buf);
    return norm;
}

/* Whether the canonical form of text `value` is in the set `acc`. */
static int
canonical_in(PyObject *value, PyObject *acc)
{
    PyObject *norm = canonical(value);
    if (norm == NULL)
        return -1;
    int r = PySet_Contains(acc, norm);
    Py_DECREF(norm);
    return r;
}

/* `_ast_spec.tag_list(value)`: a new tuple; NULL without an error where
   tag_list gives None (an item that is not a plain scalar, or a NaN). */
static PyObject *
tag_list(PyObject *value)
{
    Py_ssize_t n = PyList_GET_SIZE(value);
    PyObject *out = PyTuple_New(n);
    if (out == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *v = PyList_GET_ITEM(value, i), *tag;
        PyTypeObject *t = Py_TYPE(v);
        if (t == &PyUnicode_Type)
            tag = canonical(v);
        else if (t == &PyLong_Type || (t == &PyFloat_Type && !isnan(PyFloat_AS_DOUBLE(v))))
            tag = Py_NewRef(v);
        else if (t == &PyBool_Type)
            tag = Py_NewRef(v == Py_True ? tag_true : tag_false);
        else if (v == Py_None)
            tag = Py_NewRef(tag_null);
        else {
            Py_DECREF(out);
            return NULL;
        }
        if (tag == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        PyTuple_SET_ITEM(out, i, tag);
    }
    return out;
}

/* `_ast_spec.items_ok(value, kind)`: every item has the declared item kind. */
static int
items_ok(PyObject *value, PyObject *declared)
{
    /* The declared kind as one of the interned names (NULL: another kind, which
       no scalar item has). */
    PyObject *kinds[] = {k_any, k_str, k_int, k_float, k_bool, k_null}, *kind = NULL;
    for (size_t i = 0; i < sizeof kinds / sizeof *kinds && kind == NULL; i++)
        if (declared == kinds[i] ||
            (PyUnicode_CheckExact(declared) && PyUnicode_Compare(declared, kinds[i]) == 0))
            kind = kinds[i];
    if (kind == k_any)
        return 1;
    Py_ssize_t n = PyList_GET_SIZE(value);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *v = PyList_GET_ITEM(value, i);
        PyTypeObject *t = Py_TYPE(v);
        PyObject *k = t == &PyUnicode_Type ? k_str
                      : t == &PyLong_Type  ? k_int
                      : t == &PyFloat_Type ? k_float
                      : t == &PyBool_Type  ? k_bool
                      : v == Py_None       ? k_null
                                           : NULL;
        if (k == NULL || !(k == kind || (kind == k_float && k == k_int)))
            return 0;
    }
    return 1;
}

/* Dicts and lists by structure (_ast_structured.py): `_type_ok` against the
   schema, then `Alternatives.accepts`. Each returns 1 or 0, ERROR, or UNSURE
   where only Python can tell (an unusual schema or value); then the Python
   `_structured_ok` answers. */
#define UNSURE (-2)

/* `_ast_spec.declared(schema)` as one of the interned kind names; NULL when
   unsure (no error set). */
static PyObject *
declared(PyObject *schema)
{
    if (schema == Py_None || (PyDict_CheckExact(schema) && PyDict_GET_SIZE(schema) == 0))
        return k_any;
    if (!PyDict_CheckExact(schema))
        return NULL;
    PyObject *t = PyDict_GetItemWithError(schema, s_type); /* borrowed */
    if (t == NULL)
        return PyErr_Occurred() ? NULL : k_any;
    if (PyList_CheckExact(t)) { /* ["string", "null"]: the first that is not null */
        PyObject *first = NULL;
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(t) && first == NULL; i++) {
            PyObject *x = PyList_GET_ITEM(t, i);
            if (!PyUnicode_CheckExact(x))
                return NULL;
            if (PyUnicode_Compare(x, k_null) != 0)
                first = x;
        }
        if (first == NULL)
            return k_any;
        t = first;
    }
    if (!PyUnicode_CheckExact(t))
        return NULL;
    PyObject *kind = PyDict_GetItemWithError(kinds, t); /* borrowed */
    if (kind == NULL)
        return PyErr_Occurred() ? NULL : k_any;
    PyObject *names[] = {k_any, k_str, k_int, k_float, k_bool, k_null, k_list, k_dict};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (kind == names[i] || PyUnicode_Compare(kind, names[i]) == 0)
            return names[i];
    return NULL;
}

/* `_ast_spec.kind_of(value)` for exact JSON types; NULL for any other type. */
static PyObject *
kind_of(PyObject *value)
{
    PyTypeObject *t = Py_TYPE(value);
    return value == Py_None         ? k_null
           : t == &PyBool_Type      ? k_bool
           : t == &PyLong_Type      ? k_int
           : t == &PyFloat_Type     ? k_float
           : t == &PyUnicode_Type   ? k_str
           : t == &PyList_Type      ? k_list
           : t == &PyTuple_Type     ? k_list
           : t == &PyDict_Type      ? k_dict
                                    : NULL;
}

/* `_ast_reference._type_ok(value, schema)`. */
static int
type_ok(PyObject *value, PyObject *schema)
{
    PyObject *want = declared(schema);
    if (want == NULL)
        return PyErr_Occurred() ? ERROR : UNSURE;
    if (want == k_any)
        return 1;
    PyObject *got = kind_of(value);
    if (got == NULL)
        return 0; /* another type: its name is no declared kind */
    if (want == k_float)
        return got == k_float || got == k_int;
    if (got != want)
        return 0;
    if (want == k_list) {
        PyObject *items = PyDict_GetItemWithError(schema, s_items); /* borrowed */
        if (items == NULL)
            return PyErr_Occurred() ? ERROR : 1;
        if (!PyDict_Check(items))
            return PyMapping_Check(items) ? UNSURE : 1;
        if (!PyList_CheckExact(value))
            return UNSURE; /* a tuple */
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(value); i++) {
            int r = type_ok(PyList_GET_ITEM(value, i), items);
            if (r != 1)
                return r;
        }
    }
    return 1;
}

/* `_ast_structured.canon_value(value)`: a new reference; `unknown_value`
   (new reference) for a value canonical forms cannot represent. */
static PyObject *
canon_value(PyObject *value)
{
    PyTypeObject *t = Py_TYPE(value);
    if (t == &PyUnicode_Type)
        return canonical(value);
    if (t == &PyLong_Type || t == &PyFloat_Type)
        return Py_NewRef(value);
    if (t == &PyBool_Type)
        return Py_NewRef(value == Py_True ? tag_true : tag_false);
    if (value == Py_None)
        return Py_NewRef(tag_null);
    if (t == &PyList_Type || t == &PyTuple_Type) {
        Py_ssize_t n = PySequence_Fast_GET_SIZE(value);
        PyObject *out = PyTuple_New(n);
        if (out == NULL)
            return NULL;
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *c = canon_value(PySequence_Fast_GET_ITEM(value, i));
            if (c == NULL || c == unknown_value) {
                Py_DECREF(out);
                return c;
            }
            PyTuple_SET_ITEM(out, i, c);
        }
        return out;
    }
    if (t == &PyDict_Type) {
        PyObject *pairs = PyFrozenSet_New(NULL), *k, *v;
        if (pairs == NULL)
            return NULL;
        Py_ssize_t pos = 0;
        while (PyDict_Next(value, &pos, &k, &v)) {
            PyObject *c = canon_value(v);
            if (c == NULL || c == unknown_value) {
                Py_DECREF(pairs);
                return c;
            }
            PyObject *pair = PyTuple_Pack(2, k, c);
            Py_DECREF(c);
            if (pair == NULL || PySet_Add(pairs, pair) < 0) {
                Py_XDECREF(pair);
                Py_DECREF(pairs);
                return NULL;
            }
            Py_DECREF(pair);
        }
        PyObject *out = PyTuple_Pack(2, dict_tag, pairs);
        Py_DECREF(pairs);
        return out;
    }
    return Py_NewRef(unknown_value);
}

static int alternatives_accept(PyObject *alternatives, PyObject *value);

/* `DictPattern.accepts(value)`, value a dict. */
static int
pattern_accepts(PyObject *pattern, PyObject *value)
{
    if (Py_TYPE(pattern) != pattern_type)
        return UNSURE;
    PyObject *keys = SLOT(pattern, o_pattern_keys), *needed = SLOT(pattern, o_pattern_needed);
    if (keys == NULL || needed == NULL || !PyDict_CheckExact(keys) || !PyList_CheckExact(needed))
        return UNSURE;
    PyObject *k, *v;
    Py_ssize_t pos = 0;
    while (PyDict_Next(value, &pos, &k, &v)) {
        PyObject *alt = PyDict_GetItemWithError(keys, k); /* borrowed */
        if (alt == NULL)
            return PyErr_Occurred() ? ERROR : 0;
        int r = alternatives_accept(alt, v);
        if (r != 1)
            return r;
    }
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(needed); i++) {
        int has = PyDict_Contains(value, PyList_GET_ITEM(needed, i));
        if (has != 1)
            return has < 0 ? ERROR : 0;
    }
    return 1;
}

/* `Alternatives.accepts(value)`. */
static int
alternatives_accept(PyObject *alternatives, PyObject *value)
{
    if (Py_TYPE(alternatives) != alternatives_type)
        return UNSURE;
    PyObject *dicts = SLOT(alternatives, o_alt_dicts), *lists = SLOT(alternatives, o_alt_lists),
             *literals = SLOT(alternatives, o_alt_literals);
    if (dicts == NULL || lists == NULL || literals == NULL || !PyList_CheckExact(dicts) ||
        !PyList_CheckExact(lists) || !PyAnySet_Check(literals))
        return UNSURE;
    PyTypeObject *t = Py_TYPE(value);
    if (t == &PyDict_Type) {
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(dicts); i++) {
            int r = pattern_accepts(PyList_GET_ITEM(dicts, i), value);
            if (r != 0)
                return r;
        }
        return 0;
    }
    PyObject *c = canon_value(value);
    if (c == NULL)
        return ERROR;
    int found = PySet_Contains(literals, c);
    Py_DECREF(c);
    if (found != 0)
        return found < 0 ? ERROR : 1;
    if ((t != &PyList_Type && t != &PyTuple_Type) || PyList_GET_SIZE(lists) == 0)
        return 0;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(value);
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(lists); i++) {
        PyObject *pattern = PyList_GET_ITEM(lists, i);
        if (!PyList_CheckExact(pattern))
            return UNSURE;
        if (PyList_GET_SIZE(pattern) != n)
            continue;
        int all = 1;
        for (Py_ssize_t j = 0; j < n && all == 1; j++) {
            PyObject *v = PySequence_Fast_GET_ITEM(value, j), *p = PyList_GET_ITEM(pattern, j);
            if (Py_TYPE(p) == pattern_type) {
                all = Py_TYPE(v) == &PyDict_Type ? pattern_accepts(p, v) : 0;
            }
            else {
                PyObject *cv = canon_value(v);
                if (cv == NULL)
                    return ERROR;
                all = PyObject_RichCompareBool(cv, p, Py_EQ);
                Py_DECREF(cv);
            }
        }
        if (all != 0)
            return all == 1 ? 1 : all == -1 ? ERROR : all;
    }
    return 0;
}

/* `ast._structured_ok(spec, value)` for a dict or list: ACCEPTED, else
   GIVE_UP (the full check explains it), or ERROR. */
static int
structured_ok(PyObject *spec, PyObject *value)
{
    PyObject *built = SLOT(spec, o_structured_built), *structured = SLOT(spec, o_structured),
             *schema = SLOT(spec, o_schema);
    int r = UNSURE;
    if (built == Py_True && structured != NULL && schema != NULL) {
        if (structured == Py_None)
            return GIVE_UP;
        r = type_ok(value, schema);
        if (r == 1)
            r = alternatives_accept(structured, value);
    }
    if (r == UNSURE) { /* not built yet, or beyond what is read here: Python */
        PyObject *answer = PyObject_CallFunctionObjArgs(structured_ok_fn, spec, value, NULL);
        if (answer == NULL)
            return ERROR;
        r = PyObject_IsTrue(answer);
        Py_DECREF(answer);
    }
    return r < 0 ? ERROR : r ? ACCEPTED : GIVE_UP;
}

static int
is_scalar(PyObject *v)
{
    PyTypeObject *t = Py_TYPE(v);
    return t == &PyUnicode_Type || t == &PyLong_Type || t == &PyFloat_Type ||
           t == &PyBool_Type || v == Py_None;
}

/* A flat list found as written in `spec.raw_lists`, with the same item types. */
static int
raw_list_found(PyObject *spec, PyObject *value)
{
    PyObject *raw_lists = SLOT(spec, o_raw_lists);
    if (raw_lists == NULL || !PyDict_CheckExact(raw_lists) || PyDict_GET_SIZE(raw_lists) == 0)
        return GIVE_UP;
    Py_ssize_t n = PyList_GET_SIZE(value);
    for (Py_ssize_t i = 0; i < n; i++)
        if (!is_scalar(PyList_GET_ITEM(value, i)))
            return GIVE_UP; /* only scalars hash without running Python code */
    PyObject *items = PyList_AsTuple(value);
    if (items == NULL)
        return ERROR;
    int r = GIVE_UP;
    PyObject *types = PyDict_GetItemWithError(raw_lists, items); /* borrowed */
    if (types != NULL && PyAnySet_Check(types)) {
        PyObject *item_types = PyTuple_New(n);
        if (item_types == NULL) {
            r = ERROR;
        }
        else {
            for (Py_ssize_t i = 0; i < n; i++) {
                PyObject *t = (PyObject *)Py_TYPE(PyTuple_GET_ITEM(items, i));
                PyTuple_SET_ITEM(item_types, i, Py_NewRef(t));
            }
            int found = PySet_Contains(types, item_types);
            r = found < 0 ? ERROR : found ? ACCEPTED : GIVE_UP;
            Py_DECREF(item_types);
        }
    }
    else if (types == NULL && PyErr_Occurred()) {
        r = ERROR;
    }
    Py_DECREF(items);
    return r;
}

/* Whether two exact str objects hold the same text. */
static int
same_text(PyObject *a, PyObject *b)
{
    if (a == b)
        return 1;
    Py_ssize_t n = PyUnicode_GET_LENGTH(a);
    int kind = PyUnicode_KIND(a);
    return n == PyUnicode_GET_LENGTH(b) && kind == PyUnicode_KIND(b) &&
           memcmp(PyUnicode_DATA(a), PyUnicode_DATA(b), (size_t)(n * kind)) == 0;
}

/* 1 / 0 / -1 for `value in set`, where `set` must be a set (else GIVE_UP). */
static int
in_set(PyObject *set, PyObject *value, int *r)
{
    if (set == NULL || !PyAnySet_Check(set)) {
        *r = GIVE_UP;
        return 0;
    }
    int found = PySet_Contains(set, value);
    *r = found < 0 ? ERROR : found ? ACCEPTED : MISS;
    return 1;
}

/* A list where the schema admits lists (`acc`: the tagged acceptable lists):
   as written, else by its tagged form when its items have the declared kind
   (value_error:list when not found), else by structure. */
static int
judge_list(PyObject *spec, PyObject *value, PyObject *acc, PyObject **error)
{
    int r = raw_list_found(spec, value);
    if (r != GIVE_UP)
        return r;
    PyObject *kind = SLOT(spec, o_items_kind);
    if (kind == NULL || !PyAnySet_Check(acc))
        return GIVE_UP;
    PyObject *tagged = tag_list(value);
    if (tagged == NULL) {
        if (PyErr_Occurred())
            return ERROR;
    }
    else {
        int fits = items_ok(value, kind);
        if (fits) {
            r = PySet_Contains(acc, tagged);
            Py_DECREF(tagged);
            *error = e_list;
            return r < 0 ? ERROR : r ? ACCEPTED : MISS;
        }
        Py_DECREF(tagged);
    }
    return structured_ok(spec, value);
}

/* One argument against its spec (`_Expected.check_compiled`'s loop body):
   ACCEPTED, MISS (value_error, `*error` says which), TYPE_MISS
   (type_error:simple), GIVE_UP (Python judges the call) or ERROR. */
static int
judge(PyObject *spec, PyObject *value, PyObject **error)
{
    if (Py_TYPE(spec) != spec_type)
        return GIVE_UP;
    PyTypeObject *t = Py_TYPE(value);
    int r;
    if (t == &PyUnicode_Type) {
        PyObject *raw = SLOT(spec, o_raw);
        if (raw == NULL || !PyAnySet_Check(raw))
            return GIVE_UP;
        r = PySet_Contains(raw, value);
        if (r != 0)
            return r < 0 ? ERROR : ACCEPTED;
        PyObject *acc = SLOT(spec, o_str_accept);
        if (acc == NULL)
            return GIVE_UP;
        if (acc != Py_None) {
            if (!PyAnySet_Check(acc))
                return GIVE_UP;
            r = canonical_in(value, acc);
            *error = e_string;
            return r < 0 ? ERROR : r ? ACCEPTED : MISS;
        }
    }
    else if (t == &PyLong_Type || t == &PyFloat_Type || t == &PyBool_Type || value == Py_None ||
             t == &PyList_Type) {
        PyObject *accept = SLOT(spec, o_accept);
        if (accept == NULL || !PyDict_CheckExact(accept))
            return GIVE_UP;
        PyObject *acc = PyDict_GetItemWithError(accept, (PyObject *)t); /* borrowed */
        if (acc != NULL) {
            if (t == &PyList_Type)
                return judge_list(spec, value, acc, error);
            in_set(acc, value, &r);
            *error = e_others;
            return r;
        }
        if (PyErr_Occurred())
            return ERROR;
    }
    else if (t != &PyDict_Type) {
        return GIVE_UP; /* other types */
    }
    /* A type the schema rejects: BFCL's variable rule, if its table is built. */
    PyObject *cache = SLOT(spec, o_var_cache);
    if (cache == NULL || !PyDict_CheckExact(cache))
        return GIVE_UP;
    PyObject *var = PyDict_GetItemWithError(cache, (PyObject *)t); /* borrowed */
    if (var == Py_None)
        return TYPE_MISS;
    if (var == NULL) {
        if (PyErr_Occurred())
            return ERROR;
        return t == &PyList_Type || t == &PyDict_Type ? structured_ok(spec, value) : GIVE_UP;
    }
    if (t == &PyList_Type || t == &PyDict_Type)
        return GIVE_UP;
    in_set(var, value, &r);
    *error = e_others;
    return r;
}

/* The texts `parts` (exact str) one after another, in one allocation. */
static PyObject *
concat(PyObject *const *parts, int n)
{
    Py_ssize_t length = 0;
    Py_UCS4 widest = 0;
    for (int i = 0; i < n; i++) {
        length += PyUnicode_GET_LENGTH(parts[i]);
        Py_UCS4 w = PyUnicode_MAX_CHAR_VALUE(parts[i]);
        widest = w > widest ? w : widest;
    }
    PyObject *out = PyUnicode_New(length, widest);
    if (out == NULL)
        return NULL;
    Py_ssize_t at = 0;
    if (widest < 256) { /* one byte a character throughout: copied as bytes */
        Py_UCS1 *to = PyUnicode_1BYTE_DATA(out);
        for (int i = 0; i < n; i++) {
            Py_ssize_t len = PyUnicode_GET_LENGTH(parts[i]);
            memcpy(to + at, PyUnicode_1BYTE_DATA(parts[i]), (size_t)len);
            at += len;
        }
        return out;
    }
    for (int i = 0; i < n; i++) {
        Py_ssize_t len = PyUnicode_GET_LENGTH(parts[i]);
        if (PyUnicode_CopyCharacters(out, at, parts[i], 0, len) < 0) {
            Py_DECREF(out);
            return NULL;
        }
        at += len;
    }
    return out;
}

/* head + repr(value) + tail, the texts exact str. */
static PyObject *
around_repr(PyObject *head, PyObject *value, PyObject *tail)
{
    PyObject *repr = PyObject_Repr(value);
    if (repr == NULL)
        return NULL;
    PyObject *out = NULL;
    if (PyUnicode_CheckExact(repr)) {
        PyObject *parts[] = {head, repr, tail};
        out = concat(parts, 3);
    }
    else {
        PyErr_SetString(PyExc_TypeError, "__repr__ returned a str subclass");
    }
    Py_DECREF(repr);
    return out;
}

/* `Spec.miss(value)`: the spec's cached head and tail around the value's repr. */
static PyObject *
miss(PyObject *spec, PyObject *value)
{
    PyObject *head = SLOT(spec, o_head), *post = SLOT(spec, o_post);
    if (head == NULL || post == NULL || !PyUnicode_CheckExact(head) || !PyUnicode_CheckExact(post))
        return PyObject_CallMethodOneArg(spec, s_miss, value);
    Py_INCREF(head); /* a repr may run Python code */
    Py_INCREF(post);
    PyObject *out = around_repr(head, value, post);
    Py_DECREF(head);
    Py_DECREF(post);
    return out;
}

/* `Spec.type_miss(value)`, with `kind_of` for the plain JSON types. */
static PyObject *
type_miss(PyObject *spec, PyObject *value)
{
    PyObject *head = SLOT(spec, o_type_head), *kind = kind_of(value);
    if (head == NULL || !PyUnicode_CheckExact(head) || kind == NULL)
        return PyObject_CallMethodOneArg(spec, s_type_miss, value);
    PyObject *parts[] = {head, kind, s_open};
    PyObject *front = concat(parts, 3); /* a new object: safe across the repr */
    if (front == NULL)
        return NULL;
    PyObject *out = around_repr(front, value, s_close);
    Py_DECREF(front);
    return out;
}

static PyObject *
result(PyObject *error, PyObject *detail)
{
    return PyTuple_Pack(3, Py_False, error, detail);
}

/* The error for the first required parameter `args` lacks: a new tuple; NULL
   with no error set when none is missing; NULL with an error set on failure. */
static PyObject *
first_missing(PyObject *args, PyObject *required)
{
    PyObject *seq = PySequence_Fast(required, "required must be a sequence");
    if (seq == NULL)
        return NULL;
    PyObject *out = NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *req = PySequence_Fast_GET_ITEM(seq, i);
        int has = PyDict_Contains(args, req);
        if (has < 0)
            break;
        if (!has) {
            PyObject *detail = PyUnicode_FromFormat("missing required parameter %R", req);
            if (detail != NULL) {
                out = result(e_required, detail);
                Py_DECREF(detail);
            }
            break;
        }
    }
    Py_DECREF(seq);
    return out;
}

/* After every argument passed, with fewer arguments than the key has
   parameters: a missing required parameter, else a key parameter the key does
   not let be omitted (`_omitted`), else the pass. None for an unusual key. */
static PyObject *
left_out(PyObject *args, PyObject *key, PyObject *required)
{
    PyObject *out = first_missing(args, required);
    if (out != NULL || PyErr_Occurred())
        return out;
    PyObject *param, *options;
    Py_ssize_t pos = 0;
    while (PyDict_Next(key, &pos, &param, &options)) {
        int has = PyDict_Contains(args, param);
        if (has < 0)
            return NULL;
        if (has)
            continue;
        int omissible;
        if (PyList_CheckExact(options))
            omissible = PySequence_Contains(options, s_empty);
        else if (PyUnicode_CheckExact(options))
            omissible = PyUnicode_GET_LENGTH(options) == 0;
        else
            Py_RETURN_NONE; /* an unusual key: Python */
        if (omissible < 0)
            return NULL;
        if (!omissible) {
            PyObject *detail =
                PyUnicode_FromFormat("parameter %R is not optional in the key", param);
            if (detail == NULL)
                return NULL;
            out = result(e_optional, detail);
            Py_DECREF(detail);
            return out;
        }
    }
    return Py_NewRef(ok);
}

/* The strings table of an `_Expected` (its `strings` slot): the acceptable
   strings as written (`Spec.raw`) of every parameter with a spec, packed in
   one bytes object, so that an argument given as written is found without
   touching the spec, its sets and their strings (each a cache miss when the
   key is cold). ASCII parameters and strings only; others are not in it and
   take the sets. Layout, little-endian uint32 lengths:
   [number of specs] then per parameter [block length][name length][name]
   [number of strings] and per string [length][bytes]. */

static void
put_u32(char **at, uint32_t v)
{
    memcpy(*at, &v, 4);
    *at += 4;
}

static uint32_t
get_u32(const char **at)
{
    uint32_t v;
    memcpy(&v, *at, 4);
    *at += 4;
    return v;
}

/* The table for `specs` (borrowed from the slot, rebuilt when specs grew);
   NULL without an error when it cannot be made, NULL with one on failure. */
static PyObject *
strings_table(PyObject *expected, PyObject *specs)
{
    PyObject *table = SLOT(expected, o_strings);
    Py_ssize_t n_specs = PyDict_GET_SIZE(specs);
    if (table != NULL && PyBytes_CheckExact(table)) {
        const char *at = PyBytes_AS_STRING(table);
        if ((Py_ssize_t)get_u32(&at) == n_specs)
            return table;
    }
    /* Size it, then fill it. */
    Py_ssize_t size = 4;
    PyObject *param, *spec, *raw, *item;
    Py_ssize_t pos = 0;
    for (int fill = 0; fill < 2; fill++) {
        char *at = NULL;
        PyObject *made = NULL;
        if (fill) {
            made = PyBytes_FromStringAndSize(NULL, size);
            if (made == NULL)
                return NULL;
            at = PyBytes_AS_STRING(made);
            put_u32(&at, (uint32_t)n_specs);
        }
        pos = 0;
        while (PyDict_Next(specs, &pos, &param, &spec)) {
            if (!PyUnicode_CheckExact(param) || !PyUnicode_IS_ASCII(param) ||
                Py_TYPE(spec) != spec_type || (raw = SLOT(spec, o_raw)) == NULL ||
                !PyFrozenSet_CheckExact(raw))
                continue;
            Py_ssize_t name_len = PyUnicode_GET_LENGTH(param), block = 4 + name_len + 4;
            char *block_at = at;
            if (fill) {
                put_u32(&at, 0); /* the block length, written below */
                put_u32(&at, (uint32_t)name_len);
                memcpy(at, PyUnicode_1BYTE_DATA(param), (size_t)name_len);
                at += name_len;
            }
            uint32_t count = 0;
            char *count_at = at;
            if (fill)
                put_u32(&at, 0);
            PyObject *it = PyObject_GetIter(raw);
            if (it == NULL) {
                Py_XDECREF(made);
                return NULL;
            }
            while ((item = PyIter_Next(it)) != NULL) {
                if (PyUnicode_CheckExact(item) && PyUnicode_IS_ASCII(item)) {
                    Py_ssize_t len = PyUnicode_GET_LENGTH(item);
                    block += 4 + len;
                    count++;
                    if (fill) {
                        put_u32(&at, (uint32_t)len);
                        memcpy(at, PyUnicode_1BYTE_DATA(item), (size_t)len);
                        at += len;
                    }
                }
                Py_DECREF(item);
            }
            Py_DECREF(it);
            if (PyErr_Occurred()) {
                Py_XDECREF(made);
                return NULL;
            }
            if (fill) {
                put_u32(&block_at, (uint32_t)(4 + block));
                put_u32(&count_at, count);
            }
            else {
                size += 4 + block;
            }
        }
        if (fill) {
            PyObject *old = SLOT(expected, o_strings);
            SLOT(expected, o_strings) = made;
            Py_XDECREF(old);
            return made;
        }
    }
    return NULL; /* not reached */
}

/* 1 when `value` (ASCII text) is among the strings the table holds for
   `param` (ASCII text), 0 when not or when `param` is not in it. */
static int
in_strings_table(PyObject *table, PyObject *param, PyObject *value)
{
    const char *at = PyBytes_AS_STRING(table), *end = at + PyBytes_GET_SIZE(table);
    Py_ssize_t name_len = PyUnicode_GET_LENGTH(param), len = PyUnicode_GET_LENGTH(value);
    const void *name = PyUnicode_1BYTE_DATA(param), *text = PyUnicode_1BYTE_DATA(value);
    at += 4;
    while (at < end) {
        const char *block = at;
        uint32_t block_len = get_u32(&at);
        if (get_u32(&at) == (uint32_t)name_len && memcmp(at, name, (size_t)name_len) == 0) {
            at += name_len;
            uint32_t count = get_u32(&at);
            for (uint32_t i = 0; i < count; i++) {
                uint32_t l = get_u32(&at);
                if (l == (uint32_t)len && memcmp(at, text, (size_t)len) == 0)
                    return 1;
                at += l;
            }
            return 0;
        }
        at = block + block_len;
    }
    return 0;
}

/* The arguments `args` of a call named as expected: a new result tuple, None
   (Python must judge), or NULL on error. `table`: the expected call's strings
   table, or NULL. */
static PyObject *
check_args(PyObject *args, PyObject *specs, PyObject *key, PyObject *props, PyObject *required,
           PyObject *required_in_key, int explain, PyObject *table)
{
    if (!PyDict_CheckExact(args) || !PyDict_CheckExact(specs) || !PyDict_CheckExact(key) ||
        required == NULL || required_in_key == NULL)
        Py_RETURN_NONE; /* unusual containers: Python */
    PyObject *param, *value;
    Py_ssize_t pos = 0;
    while (PyDict_Next(args, &pos, &param, &value)) {
        if (table != NULL && PyUnicode_CheckExact(value) && PyUnicode_IS_ASCII(value) &&
            PyUnicode_CheckExact(param) && PyUnicode_IS_ASCII(param) &&
            in_strings_table(table, param, value))
            continue; /* as written, whatever the type (Spec.raw) */
        PyObject *spec = PyDict_GetItemWithError(specs, param); /* borrowed */
        if (spec == NULL) {
            if (PyErr_Occurred())
                return NULL;
            /* Only parameters in both the schema and the key may be given. */
            int in_key = PyDict_Contains(key, param);
            int in_props = props != NULL && PyDict_CheckExact(props) && in_key == 1
                               ? PyDict_Contains(props, param)
                               : -2;
            if (in_key < 0 || in_props == -1)
                return NULL;
            if (in_props == 1 || (in_key == 1 && in_props == -2))
                Py_RETURN_NONE; /* a spec not yet built (or unusual props): Python */
            if (explain < 0)
                return Py_NewRef(rejected);
            PyObject *out = first_missing(args, required);
            if (out != NULL || PyErr_Occurred())
                return out;
            PyObject *detail =
                explain ? PyUnicode_FromFormat("unexpected parameter %R", param) : Py_NewRef(s_empty);
            if (detail == NULL)
                return NULL;
            out = result(e_unexpected, detail);
            Py_DECREF(detail);
            return out;
        }
        PyObject *error = NULL;
        Py_INCREF(spec); /* judge may run Python code (canon, _structured_ok) */
        Py_INCREF(value);
        int r = judge(spec, value, &error);
        Py_DECREF(value);
        Py_DECREF(spec);
        if (r == ACCEPTED)
            continue;
        if (r == ERROR)
            return NULL;
        if (r == GIVE_UP)
            Py_RETURN_NONE;
        if (explain < 0)
            return Py_NewRef(rejected); /* the verdict alone */
        /* Rejected: a missing required parameter is reported first. */
        PyObject *out = first_missing(args, required);
        if (out != NULL || PyErr_Occurred())
            return out;
        Py_INCREF(spec);
        Py_INCREF(value);
        PyObject *detail = !explain    ? Py_NewRef(s_empty)
                           : r == MISS ? miss(spec, value)
                                       : type_miss(spec, value);
        Py_DECREF(value);
        Py_DECREF(spec);
        if (detail == NULL)
            return NULL;
        out = result(r == MISS ? error : e_type, detail);
        Py_DECREF(detail);
        return out;
    }
    if (PyDict_GET_SIZE(args) < PyDict_GET_SIZE(key))
        return left_out(args, key, required);
    if (required_in_key == Py_False) {
        /* The key lacks a required parameter: it must be given all the same. */
        PyObject *out = first_missing(args, required);
        return out != NULL || PyErr_Occurred() ? out : Py_NewRef(ok);
    }
    if (required_in_key != Py_True)
        Py_RETURN_NONE; /* whether the key holds every required parameter: Python finds out */
    return Py_NewRef(ok);
}

/* A call named `name` with arguments `args` against `expected` (an `_Expected`
   of a compiled Python-language key), names compared exactly: `_Expected.check`.
   `checked_name`: `name` when the caller has found it equal to the key's. */
static PyObject *
check_expected(PyObject *expected, PyObject *name, PyObject *args, int explain,
               PyObject *checked_name)
{
    if (Py_TYPE(expected) != expected_type)
        Py_RETURN_NONE;
    PyObject *key_name = SLOT(expected, o_key_name);
    if (key_name == NULL || !PyUnicode_CheckExact(key_name) || !PyUnicode_CheckExact(name))
        Py_RETURN_NONE;
    if (name != checked_name && !same_text(name, key_name)) {
        PyObject *detail = PyUnicode_FromFormat("expected %R, got %R", key_name, name);
        if (detail == NULL)
            return NULL;
        PyObject *out = result(e_name, detail);
        Py_DECREF(detail);
        return out;
    }
    PyObject *specs = SLOT(expected, o_specs), *table = NULL;
    if (specs != NULL && PyDict_CheckExact(specs) && PyDict_GET_SIZE(specs) > 0) {
        table = strings_table(expected, specs);
        if (table == NULL && PyErr_Occurred())
            return NULL;
    }
    return check_args(args, specs, SLOT(expected, o_key), SLOT(expected, o_props),
                      SLOT(expected, o_required), SLOT(expected, o_required_in_key), explain,
                      table);
}

/* `CompiledKey._match` for parallel calls: in their own positions, or an
   expected call no call fits (see the top of this file); None otherwise. The
   caller has checked that `expected` is a list of compiled `_Expected`. */
static PyObject *
parallel_calls(PyObject *calls, PyObject *expected)
{
    Py_ssize_t n = PyList_GET_SIZE(expected);
    if (!PyList_CheckExact(calls) || PyList_GET_SIZE(calls) != n || n == 0 || n > MAX_CALLS)
        Py_RETURN_NONE;
    PyObject *names[MAX_CALLS], *argss[MAX_CALLS];
    Py_ssize_t got = 0, i;
    PyObject *out = NULL, *failed = NULL;
    for (; got < n; got++) {
        /* Only calls of the usual shape {name: {arg: value}}. */
        PyObject *call = PyList_GET_ITEM(calls, got), *name, *args;
        Py_ssize_t pos = 0;
        if (!PyDict_CheckExact(call) || PyDict_GET_SIZE(call) != 1 ||
            !PyDict_Next(call, &pos, &name, &args) || !PyUnicode_CheckExact(name) ||
            !PyDict_CheckExact(args))
            goto give_up;
        names[got] = Py_NewRef(name);
        argss[got] = Py_NewRef(args);
    }
    /* Outputs usually follow the key's order: that pairing first. */
    for (i = 0; i < n; i++) {
        failed = check_expected(PyList_GET_ITEM(expected, i), names[i], argss[i], 1, NULL);
        if (failed == NULL)
            goto done;
        if (failed == Py_None)
            goto give_up;
        if (PyTuple_GET_ITEM(failed, 0) != Py_True)
            break;
        Py_CLEAR(failed);
    }
    if (i == n) {
        out = Py_NewRef(ok);
        goto done;
    }
    /* Does any other call of its name fit expected call i? */
    PyObject *exp = PyList_GET_ITEM(expected, i);
    PyObject *key_name = SLOT(exp, o_key_name); /* a str: check_expected saw it */
    Py_ssize_t first_named = -1;
    for (Py_ssize_t j = 0; j < n; j++) {
        if (!same_text(names[j], key_name))
            continue;
        if (first_named < 0)
            first_named = j;
        if (j == i)
            continue;
        PyObject *r = check_expected(exp, names[j], argss[j], VERDICT, names[j]);
        if (r == NULL)
            goto done;
        int fits_or_unknown = r == Py_None || PyTuple_GET_ITEM(r, 0) == Py_True;
        Py_DECREF(r);
        if (fits_or_unknown)
            goto give_up; /* a pairing to look for: Python's matching */
    }
    /* None does: explained by the first call of its name, else the first call. */
    Py_ssize_t j = first_named >= 0 ? first_named : 0;
    PyObject *why = j == i ? Py_NewRef(failed) : check_expected(exp, names[j], argss[j], 1, NULL);
    if (why == NULL)
        goto done;
    if (why == Py_None) {
        Py_DECREF(why);
        goto give_up;
    }
    PyObject *number = i < MAX_CALLS ? Py_NewRef(numbers[i]) : PyUnicode_FromFormat("%zd", i);
    PyObject *detail = NULL;
    PyObject *because = PyTuple_GET_ITEM(why, 2);
    if (number != NULL && PyUnicode_CheckExact(because)) {
        PyObject *parts[] = {s_no_call, number, s_open, key_name, s_colon, because};
        detail = concat(parts, 6);
    }
    else if (number != NULL) {
        detail = PyUnicode_FromFormat("no call matches expected call %U (%U): %S", number,
                                      key_name, because);
    }
    if (detail != NULL) {
        out = result(PyTuple_GET_ITEM(why, 1), detail);
        Py_DECREF(detail);
    }
    Py_XDECREF(number);
    Py_DECREF(why);
    goto done;
give_up:
    out = Py_NewRef(Py_None);
done:
    Py_XDECREF(failed);
    for (Py_ssize_t k = 0; k < got; k++) {
        Py_DECREF(names[k]);
        Py_DECREF(argss[k]);
    }
    return out;
}

/* 1 when `category` (a str) is in `names`, 0 when not, -1 on error. */
static int
named(PyObject *names, PyObject *category)
{
    return PyUnicode_CheckExact(category) ? PySet_Contains(names, category) : 0;
}

/* `CompiledKey.match` for `self`: a new result tuple, None when Python must
   decide, NULL on error. */
static PyObject *
decide(PyObject *self, PyObject *calls, PyObject *category)
{
    if (Py_TYPE(self) != key_type)
        Py_RETURN_NONE;
    PyObject *first = SLOT(self, o_first);
    if (first == NULL)
        Py_RETURN_NONE;
    if (first != Py_None) {
        /* One call of a dict named as expected. */
        int one = named(one_call_names, category);
        if (one <= 0)
            return one < 0 ? NULL : Py_NewRef(Py_None);
        if (!PyList_CheckExact(calls) || PyList_GET_SIZE(calls) != 1)
            Py_RETURN_NONE;
        PyObject *call = PyList_GET_ITEM(calls, 0), *name, *args;
        Py_ssize_t pos = 0;
        if (!PyDict_CheckExact(call) || PyDict_GET_SIZE(call) != 1)
            Py_RETURN_NONE;
        PyDict_Next(call, &pos, &name, &args);
        PyObject *key_name = SLOT(first, o_key_name);
        if (key_name == NULL || !PyUnicode_CheckExact(name) || !PyUnicode_CheckExact(key_name) ||
            !same_text(name, key_name))
            Py_RETURN_NONE; /* another name: Python says so */
        Py_INCREF(first);
        PyObject *out = check_expected(first, name, args, 1, name);
        Py_DECREF(first);
        return out;
    }
    /* Parallel calls against a compiled Python-language key, names exact. */
    int par = named(parallel_names, category);
    if (par <= 0)
        return par < 0 ? NULL : Py_NewRef(Py_None);
    PyObject *language = SLOT(self, o_language), *expected = SLOT(self, o_expected);
    if (language == NULL || expected == NULL || !PyUnicode_CheckExact(language) ||
        PyUnicode_Compare(language, s_python) != 0 ||
        SLOT(self, o_name_equivalence) != Py_False || !PyList_CheckExact(expected) ||
        PyList_GET_SIZE(expected) == 0)
        Py_RETURN_NONE;
    PyObject *exp0 = PyList_GET_ITEM(expected, 0);
    if (Py_TYPE(exp0) != expected_type || SLOT(exp0, o_compiled) != Py_True)
        Py_RETURN_NONE;
    Py_INCREF(expected);
    PyObject *out = parallel_calls(calls, expected);
    Py_DECREF(expected);
    return out;
}

/* CompiledKey.match(self, calls, category="simple"): what decide() decides,
   else CompiledKey's Python `match`. */
static PyObject *
match(PyObject *Py_UNUSED(callable), PyObject *const *argv, size_t nargsf, PyObject *kwnames)
{
    Py_ssize_t n = PyVectorcall_NARGS(nargsf);
    if (python_match == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "_ast_native.configure was not called");
        return NULL;
    }
    if (kwnames == NULL && (n == 2 || n == 3)) {
        PyObject *out = decide(argv[0], argv[1], n == 3 ? argv[2] : s_simple);
        if (out != Py_None)
            return out; /* a result, or NULL on error */
        Py_DECREF(out);
    }
    return PyObject_Vectorcall(python_match, argv, n, kwnames);
}

/* The offset of slot `name` of class `cls` (a T_OBJECT_EX member descriptor). */
static int
slot_offset(PyObject *cls, const char *name, Py_ssize_t *offset)
{
    PyObject *d = PyObject_GetAttrString(cls, name);
    if (d == NULL)
        return -1;
    int fine = Py_IS_TYPE(d, &PyMemberDescr_Type) &&
               ((PyMemberDescrObject *)d)->d_member->type == T_OBJECT_EX;
    if (fine)
        *offset = ((PyMemberDescrObject *)d)->d_member->offset;
    else
        PyErr_Format(PyExc_TypeError, "%R.%s is not a __slots__ attribute", cls, name);
    Py_DECREF(d);
    return fine ? 0 : -1;
}

static PyObject *
configure(PyObject *Py_UNUSED(module), PyObject *const *argv, Py_ssize_t argc)
{
    if (argc != 7 || !PyAnySet_Check(argv[0]) || !PyAnySet_Check(argv[1]) ||
        !PyCallable_Check(argv[2]) || !PyType_Check(argv[3]) || !PyType_Check(argv[4]) ||
        !PyType_Check(argv[5]) || !PyTuple_Check(argv[6]) || PyTuple_GET_SIZE(argv[6]) != 10 ||
        !PyDict_CheckExact(PyTuple_GET_ITEM(argv[6], 5)) ||
        !PyType_Check(PyTuple_GET_ITEM(argv[6], 6)) ||
        !PyType_Check(PyTuple_GET_ITEM(argv[6], 7))) {
        PyErr_SetString(PyExc_TypeError,
                        "configure(one_call: set, parallel: set, python_match, CompiledKey, "
                        "_Expected, Spec, (canon, structured_ok, tag_true, tag_false, tag_null, "
                        "KIND, Alternatives, DictPattern, _DICT, _UNKNOWN))");
        return NULL;
    }
    PyObject *k = argv[3], *e = argv[4], *s = argv[5];
    PyObject *alt = PyTuple_GET_ITEM(argv[6], 6), *pat = PyTuple_GET_ITEM(argv[6], 7);
    if (slot_offset(s, "structured", &o_structured) ||
        slot_offset(s, "structured_built", &o_structured_built) ||
        slot_offset(s, "schema", &o_schema) || slot_offset(alt, "dicts", &o_alt_dicts) ||
        slot_offset(alt, "lists", &o_alt_lists) || slot_offset(alt, "literals", &o_alt_literals) ||
        slot_offset(pat, "keys", &o_pattern_keys) || slot_offset(pat, "needed", &o_pattern_needed))
        return NULL;
    if (slot_offset(k, "first", &o_first) || slot_offset(k, "first_name", &o_first_name) ||
        slot_offset(k, "expected", &o_expected) || slot_offset(k, "language", &o_language) ||
        slot_offset(k, "name_equivalence", &o_name_equivalence) ||
        slot_offset(e, "key_name", &o_key_name) || slot_offset(e, "props", &o_props) || slot_offset(e, "key", &o_key) ||
        slot_offset(e, "specs", &o_specs) || slot_offset(e, "required", &o_required) ||
        slot_offset(e, "required_in_key", &o_required_in_key) ||
        slot_offset(e, "compiled", &o_compiled) || slot_offset(e, "strings", &o_strings) || slot_offset(s, "raw", &o_raw) ||
        slot_offset(s, "str_accept", &o_str_accept) || slot_offset(s, "accept", &o_accept) ||
        slot_offset(s, "var_cache", &o_var_cache) || slot_offset(s, "raw_lists", &o_raw_lists) ||
        slot_offset(s, "head", &o_head) || slot_offset(s, "post", &o_post) ||
        slot_offset(s, "type_head", &o_type_head) || slot_offset(s, "items_kind", &o_items_kind))
        return NULL;
    PyObject *helpers = argv[6];
    Py_XSETREF(canon_fn, Py_NewRef(PyTuple_GET_ITEM(helpers, 0)));
    Py_XSETREF(structured_ok_fn, Py_NewRef(PyTuple_GET_ITEM(helpers, 1)));
    Py_XSETREF(tag_true, Py_NewRef(PyTuple_GET_ITEM(helpers, 2)));
    Py_XSETREF(tag_false, Py_NewRef(PyTuple_GET_ITEM(helpers, 3)));
    Py_XSETREF(tag_null, Py_NewRef(PyTuple_GET_ITEM(helpers, 4)));
    Py_XSETREF(kinds, Py_NewRef(PyTuple_GET_ITEM(helpers, 5)));
    Py_XSETREF(alternatives_type, (PyTypeObject *)Py_NewRef(alt));
    Py_XSETREF(pattern_type, (PyTypeObject *)Py_NewRef(pat));
    Py_XSETREF(dict_tag, Py_NewRef(PyTuple_GET_ITEM(helpers, 8)));
    Py_XSETREF(unknown_value, Py_NewRef(PyTuple_GET_ITEM(helpers, 9)));
    Py_XSETREF(one_call_names, Py_NewRef(argv[0]));
    Py_XSETREF(parallel_names, Py_NewRef(argv[1]));
    Py_XSETREF(python_match, Py_NewRef(argv[2]));
    Py_XSETREF(key_type, (PyTypeObject *)Py_NewRef(k));
    Py_XSETREF(expected_type, (PyTypeObject *)Py_NewRef(e));
    Py_XSETREF(spec_type, (PyTypeObject *)Py_NewRef(s));
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"configure", (PyCFunction)(void (*)(void))configure, METH_FASTCALL,
     "configure(one_call_names, parallel_names, python_match, CompiledKey, _Expected, Spec)"},
    {NULL, NULL, 0, NULL},
};

/* `match` as a method descriptor (as a Python function is one): a call
   `key.match(...)` passes the key first, without making a bound method. */
typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
} Method;

static PyObject *
method_get(PyObject *self, PyObject *obj, PyObject *Py_UNUSED(type))
{
    if (obj == NULL || obj == Py_None)
        return Py_NewRef(self);
    return PyMethod_New(self, obj);
}

static PyTypeObject MethodType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "agentgauge.graders._ast_native.Method",
    .tp_basicsize = sizeof(Method),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_METHOD_DESCRIPTOR | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_vectorcall_offset = offsetof(Method, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_descr_get = method_get,
    .tp_doc = "match(calls, category='simple'): `ast_match` against the compiled key "
              "(decided natively where the lookup sets decide; see agentgauge.graders.ast).",
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_ast_native", "Native AST matching for agentgauge.graders.ast.",
    -1, methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC
PyInit__ast_native(void)
{
    PyObject **strings[] = {&s_type, &s_items, &e_unexpected, &e_list, &k_any, &k_str, &k_int, &k_float, &k_bool, &k_null,
                            &k_list, &k_dict, &s_open, &s_close, &s_no_call, &s_colon,
                            &e_string, &e_others, &e_type, &e_required, &e_optional, &e_name,
                            &s_miss, &s_type_miss, &s_empty, &s_python, &s_simple};
    const char *texts[] = {"type", "items", "unexpected_param", "value_error:list", "any", "str", "int", "float", "bool", "null",
                           "list", "dict", " (", ")", "no call matches expected call ", "): ",
                           "value_error:string", "value_error:others", "type_error:simple",
                           "missing_required", "missing_optional", "wrong_func_name",
                           "miss", "type_miss", "", "python", "simple"};
    for (size_t i = 0; i < sizeof strings / sizeof *strings; i++)
        if ((*strings[i] = PyUnicode_InternFromString(texts[i])) == NULL)
            return NULL;
    for (int i = 0; i < MAX_CALLS; i++)
        if ((numbers[i] = PyUnicode_FromFormat("%d", i)) == NULL)
            return NULL;
    if ((ok = PyTuple_Pack(3, Py_True, Py_None, s_empty)) == NULL ||
        (rejected = PyTuple_Pack(3, Py_False, Py_None, s_empty)) == NULL)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
    Method *method = PyType_Ready(&MethodType) < 0 ? NULL : PyObject_New(Method, &MethodType);
    if (method != NULL)
        method->vectorcall = match;
    if (method == NULL || PyModule_AddObject(m, "match", (PyObject *)method) < 0) {
        Py_XDECREF(method);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
