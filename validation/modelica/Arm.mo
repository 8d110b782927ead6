model Arm
  "Modelica MultiBody twin of examples/arm.toml: a three-link arm on a fixed base (MSL 4.x)"

  /* ------------------------------------------------------------------------
     Twin of the system file examples/arm.toml (the arm of docs/tutorial.md),
     built from Modelica.Mechanics.MultiBody (MSL 4.x) only.  Compare the two
     with

       python validation/compare_twin.py examples/arm.toml validation/modelica/Arm.mo

     Topology (unit names of the system file)
       base   imposed_motion_base_c1, p.a = 0: fixed, P at the origin, c1.r = 0
        |- c1 -> link1 revolute_c1 (z) -> c1 -> link2 revolute_c1 (z)
                                               -> c1 -> link3 revolute_c1 (z), c1 = the tool tip

     Convention mapping (docs/modelica-twins.md; validation/modelica/README.md):
     - World(g = 9.81, n = {0,-1,0}): the blocks' default gravity [0, -9.81, 0].
     - The base does not move (its imposed acceleration is zero, r0 = 0,
       Theta0 = 0): the first joint's frame_a is the world's frame_b; its
       mass and inertia only set the reaction p.w, which is not recorded.
     - A link = Joints.Revolute(n = axis, useAxisFlange = true) whose frame_b
       carries the link's Parts.Body (frame_a at the joint point P, r_CM =
       com, I_11 .. I_33 = inertia) and a Parts.FixedTranslation(r = c1.r) to
       its child point.
     - Joint damper d: Rotational.Components.Damper(d) between the joint's
       support and axis flanges: -d qdot on the joint.
     - Constant input link1.joint.tau = 25 N m: a Rotational.Sources.
       ConstantTorque(tau_constant = 25, useSupport = true) between the same
       flanges: a torque on link1 about the axis, its reaction on the parent,
       as TITOP's C_m.
     - The free tool tip (link3.c1.w = 0): nothing connected to link3_c1.frame_b.
     - Outputs named after the record entries ("." and "[k]" -> "_", "_k"):
       <link>.joint.q[3] -> the joint's phi; link3.c1.position = [I C1]_Ri ->
       link3_c1.frame_b.r_0 (the tip's position in the world frame).
     ------------------------------------------------------------------------ */

  import MB = Modelica.Mechanics.MultiBody;
  import Rot = Modelica.Mechanics.Rotational;

  inner MB.World world(g=9.81, n={0, -1, 0}, enableAnimation=false) "R_i, y up";

  // ---- link1: revolute_c1 on base.c1 (the origin), the shoulder ---------------
  MB.Joints.Revolute link1_joint(useAxisFlange=true, n={0, 0, 1},
    phi(fixed=true, start=0), w(fixed=true, start=0)) "link1 axis z";
  Rot.Components.Damper link1_damper(d=12.0) "link1 d";
  Rot.Sources.ConstantTorque link1_motor(tau_constant=25.0, useSupport=true) "link1.joint.tau";
  MB.Parts.Body link1(m=2.0, r_CM={0, -0.5, 0},
    I_11=0.17, I_22=0.01, I_33=0.17, I_21=0, I_31=0, I_32=0) "link1 body";
  MB.Parts.FixedTranslation link1_c1(r={0, -1.0, 0}) "link1 c1.r, the elbow";

  // ---- link2: revolute_c1 on link1.c1, the elbow -------------------------------
  MB.Joints.Revolute link2_joint(useAxisFlange=true, n={0, 0, 1},
    phi(fixed=true, start=0), w(fixed=true, start=0)) "link2 axis z";
  Rot.Components.Damper link2_damper(d=2.0) "link2 d";
  MB.Parts.Body link2(m=1.5, r_CM={0, -0.4, 0},
    I_11=0.08, I_22=0.005, I_33=0.08, I_21=0, I_31=0, I_32=0) "link2 body";
  MB.Parts.FixedTranslation link2_c1(r={0, -0.8, 0}) "link2 c1.r, the wrist";

  // ---- link3: revolute_c1 on link2.c1, the wrist; its c1 is the tool tip --------
  MB.Joints.Revolute link3_joint(useAxisFlange=true, n={0, 0, 1},
    phi(fixed=true, start=0), w(fixed=true, start=0)) "link3 axis z";
  Rot.Components.Damper link3_damper(d=2.0) "link3 d";
  MB.Parts.Body link3(m=1.0, r_CM={0, -0.25, 0},
    I_11=0.02, I_22=0.002, I_33=0.02, I_21=0, I_31=0, I_32=0) "link3 body";
  MB.Parts.FixedTranslation link3_c1(r={0, -0.5, 0}) "link3 c1.r, the tool tip";

  // ---- outputs: the system file's record list, in order -------------------------
  output Real link1_joint_q_3(unit="rad") "link1.joint.q[3]";
  output Real link2_joint_q_3(unit="rad") "link2.joint.q[3]";
  output Real link3_joint_q_3(unit="rad") "link3.joint.q[3]";
  output Real link3_c1_position_1(unit="m") "link3.c1.position[1]: the tool tip in R_i";
  output Real link3_c1_position_2(unit="m") "link3.c1.position[2]";
  output Real link3_c1_position_3(unit="m") "link3.c1.position[3]";

equation
  connect(world.frame_b, link1_joint.frame_a);
  connect(link1_damper.flange_a, link1_joint.support);
  connect(link1_damper.flange_b, link1_joint.axis);
  connect(link1_motor.support, link1_joint.support);
  connect(link1_motor.flange, link1_joint.axis);
  connect(link1_joint.frame_b, link1.frame_a);
  connect(link1_joint.frame_b, link1_c1.frame_a);

  connect(link1_c1.frame_b, link2_joint.frame_a);
  connect(link2_damper.flange_a, link2_joint.support);
  connect(link2_damper.flange_b, link2_joint.axis);
  connect(link2_joint.frame_b, link2.frame_a);
  connect(link2_joint.frame_b, link2_c1.frame_a);

  connect(link2_c1.frame_b, link3_joint.frame_a);
  connect(link3_damper.flange_a, link3_joint.support);
  connect(link3_damper.flange_b, link3_joint.axis);
  connect(link3_joint.frame_b, link3.frame_a);
  connect(link3_joint.frame_b, link3_c1.frame_a);

  link1_joint_q_3 = link1_joint.phi;
  link2_joint_q_3 = link2_joint.phi;
  link3_joint_q_3 = link3_joint.phi;
  link3_c1_position_1 = link3_c1.frame_b.r_0[1];
  link3_c1_position_2 = link3_c1.frame_b.r_0[2];
  link3_c1_position_3 = link3_c1.frame_b.r_0[3];
end Arm;
