loom.register_framework{
    name = "mytrainer",
    style = "trainer",
    plan = function(req) return {} end,
}
